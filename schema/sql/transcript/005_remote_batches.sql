-- The economy lane's Message Batches in flight at the Bridge (issue 23), one row per remote
-- batch and one per curator request in it. Written before the create call (status
-- 'submitting'), given the Bridge's id as soon as it answers, and kept until every request's
-- result is applied or handed to the prompt lane.
--
-- Why here and not in memory.db: a remote batch is a fact about the outside world, like the
-- charges beside it. memory.db may be restored from a backup or swapped by `wsd rebuild`; the
-- batch is still at the Bridge, already paid for, and its result is still worth applying to
-- turns the restored ledger does not cover. Exactly-once stays where it was: the ledger's
-- batch_turns (memory.db) refuses a second commit of any turn; this table only says what to
-- poll and which turns not to send again while their result is on its way.
CREATE TABLE remote_batches (
    id                  INTEGER PRIMARY KEY,
    remote_id           TEXT UNIQUE,             -- the Bridge's msgbatch id (NULL: create not answered)
    transcript_identity TEXT NOT NULL,
    -- submitting: recorded, create not answered yet (after a crash: its turns are released;
    --   the submission, if it reached the Bridge, is a duplicate counted in spend);
    -- in_flight: polling; settled: every request applied or released.
    status              TEXT NOT NULL CHECK (status IN ('submitting', 'in_flight', 'settled')),
    created_at          REAL NOT NULL,
    submitted_at        REAL,
    ended_at            REAL,                    -- when the Bridge said it ended
    settled_at          REAL,
    polls               INTEGER NOT NULL DEFAULT 0 CHECK (polls >= 0),
    next_poll_at        REAL,
    fetches             INTEGER NOT NULL DEFAULT 0 CHECK (fetches >= 0),  -- results reads tried
    misses              INTEGER NOT NULL DEFAULT 0 CHECK (misses >= 0),   -- "no such batch" answers in a row
    error               TEXT,                    -- the last poll's or fetch's problem
    base_json           TEXT NOT NULL            -- the memory files every request was built from
) STRICT;

CREATE TABLE remote_requests (
    remote_batch_id INTEGER NOT NULL REFERENCES remote_batches (id) ON DELETE CASCADE,
    custom_id       TEXT NOT NULL,
    position        INTEGER NOT NULL,            -- claim order: results are applied in it
    turn_ids        TEXT NOT NULL,               -- JSON array of observation ids
    offered_json    TEXT NOT NULL,               -- JSON: the related learning ids shown
    actions_json    TEXT NOT NULL,               -- JSON: the open action ids shown
    request_chars   INTEGER NOT NULL CHECK (request_chars >= 0),
    started_at      REAL NOT NULL,
    charge_id       INTEGER,                     -- its row in charges (booked at submission)
    -- NULL: pending. applied / covered (its turns were curated meanwhile: discarded) /
    -- released (handed to the prompt lane: errored, expired, canceled, missing, lost).
    outcome         TEXT CHECK (outcome IN ('applied', 'covered', 'released')),
    detail          TEXT,
    PRIMARY KEY (remote_batch_id, custom_id)
) STRICT;

-- The turns a pending request holds (the loop does not send them again meanwhile).
CREATE TABLE remote_turns (
    observation_id  INTEGER PRIMARY KEY,
    remote_batch_id INTEGER NOT NULL REFERENCES remote_batches (id) ON DELETE CASCADE,
    custom_id       TEXT NOT NULL
) STRICT;

-- Turns whose economy request failed (errored, expired, canceled, missing, lost): the loop
-- sends them through the prompt lane, which retries, splits and parks as it always did.
CREATE TABLE prompt_only_turns (
    observation_id INTEGER PRIMARY KEY,
    reason         TEXT NOT NULL,
    at             REAL NOT NULL
) STRICT;
