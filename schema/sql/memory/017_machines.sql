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
