-- One memory on many machines (SPEC.md section 11).
--
-- origin_key: on a satellite, the id a closed turn gets once it is settled (sealed): random,
-- so it survives this database being restored (the restored row keeps it) and a recreated or
-- rewound database never reuses one (an AUTOINCREMENT id would: a restore from an older
-- point hands the lost turns' ids to new ones). A sealed turn is never folded again: what
-- comes late becomes an addendum, as after curation. On home, origin_machine and origin_key
-- say which satellite's turn an ingested row is; the unique index is the exactly-once of
-- the ingest (memory.db's machine_turns is that of the curation).
ALTER TABLE observations ADD COLUMN origin_machine TEXT;
ALTER TABLE observations ADD COLUMN origin_key TEXT;

CREATE UNIQUE INDEX observations_origin ON observations (origin_machine, origin_key)
    WHERE origin_key IS NOT NULL;
CREATE INDEX observations_unsealed ON observations (id) WHERE origin_key IS NULL;

-- Home's place in each followed satellite transcript (one row per machine and database
-- identity): the last satellite observation id ingested, and its key, so that a rewound
-- database (the key at that id differs) is read again from its start.
CREATE TABLE machine_cursors (
    machine    TEXT NOT NULL,
    identity   TEXT NOT NULL,
    last_id    INTEGER NOT NULL,
    last_key   TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (machine, identity)
) STRICT;

-- A satellite's hand edit of a file of the person's memory (user.md, context.md), carried
-- home like a turn: what it started from (the sha256 of the version this machine last had
-- from home; NULL: none) and the edited text. Home adopts it when that is still its
-- latest, else keeps both and asks the person (memory.db's md_proposals says which).
CREATE TABLE md_proposals (
    uid        TEXT PRIMARY KEY,
    file       TEXT NOT NULL CHECK (file IN ('user.md', 'context.md')),
    base_sha   TEXT,
    content    TEXT NOT NULL,
    created_at REAL NOT NULL,
    settled_at REAL
) STRICT;

-- A forget asked on this satellite (``wsd forget``), carried home as what home recognises it
-- by: the keyed hash of the phrase's stems with home's forget_key (from this machine's copy
-- of home's memory), never the words (SPEC.md section 11). Home erases what its memory and
-- transcript hold of it and publishes the mark, which every machine then applies.
CREATE TABLE forget_marks_out (
    digest     TEXT PRIMARY KEY,
    words      INTEGER NOT NULL CHECK (words > 0),
    created_at REAL NOT NULL
) STRICT;
