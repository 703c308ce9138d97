-- One memory on many machines (SPEC.md section 11): every satellite turn home curated, by
-- the machine and the turn's origin key, written in the batch's own transaction (so it is
-- the cursor committed with the batch: a turn here is never curated again, whatever happens
-- to home's transcript.db), and read by the satellite, through its followed copy, to mark
-- its turns curated.
CREATE TABLE machine_turns (
    machine    TEXT NOT NULL,
    origin_key TEXT NOT NULL,
    batch_id   INTEGER NOT NULL,
    curated_at REAL NOT NULL,
    PRIMARY KEY (machine, origin_key)
) STRICT, WITHOUT ROWID;

CREATE INDEX machine_turns_batch ON machine_turns (machine, batch_id);

-- Each satellite's hand edit home took in (transcript 013's md_proposals): adopted as a
-- revision (its base was home's latest), or kept here as a conflict for the person, with a
-- pending action; read by the satellite through its copy to know its edit was taken.
CREATE TABLE md_proposals (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    machine    TEXT NOT NULL,
    uid        TEXT NOT NULL,
    file       TEXT NOT NULL,
    base_sha   TEXT,
    content    TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('adopted', 'conflict', 'resolved')),
    revision_id INTEGER REFERENCES md_revisions (id),
    created_at REAL NOT NULL,
    UNIQUE (machine, uid)
) STRICT;

-- Each satellite's forget home took in (transcript 013's forget_marks_out), once.
CREATE TABLE machine_forgets (
    machine  TEXT NOT NULL,
    digest   TEXT NOT NULL,
    taken_at REAL NOT NULL,
    PRIMARY KEY (machine, digest)
) STRICT, WITHOUT ROWID;
