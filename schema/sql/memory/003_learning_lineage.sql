-- Learnings that earn their place, and a ledger that says what it refused.

-- A newer learning may replace an older one (the curator says so). The old one
-- is kept and stays searchable, flagged and ranked below its successor; it
-- leaves the boot context.
ALTER TABLE learnings ADD COLUMN superseded_by INTEGER REFERENCES learnings (id);
ALTER TABLE learnings ADD COLUMN superseded_at REAL;

CREATE INDEX learnings_current ON learnings (created_at) WHERE superseded_by IS NULL;

-- Every turn a learning came from: the turn it cites, or all the batch's turns
-- when it cites none (learnings.source_observation_id keeps the first).
CREATE TABLE learning_sources (
    learning_id         INTEGER NOT NULL REFERENCES learnings (id) ON DELETE CASCADE,
    transcript_identity TEXT NOT NULL,
    observation_id      INTEGER NOT NULL,
    PRIMARY KEY (learning_id, transcript_identity, observation_id)
) STRICT, WITHOUT ROWID;

-- `wsd forget ID`: a person retracts a learning. The row (and so its FTS
-- entry) is deleted; what stays is that it was retracted, when, and its
-- content key, so curation (or a rebuild) does not store the same text again.
CREATE TABLE retractions (
    learning_id  INTEGER PRIMARY KEY,
    type         TEXT NOT NULL,
    content_key  TEXT NOT NULL,
    batch_id     INTEGER,
    created_at   REAL NOT NULL,
    retracted_at REAL NOT NULL,
    reason       TEXT
) STRICT;

CREATE INDEX retractions_key ON retractions (content_key);

-- What the guards refused of a batch's reply (JSON: over the loss limit, a
-- line or byte limit, the caps on learnings and actions, repeats), for
-- `wsd status` and the log; NULL when nothing was refused.
ALTER TABLE batches ADD COLUMN refused TEXT;

-- The daily spend cap sums the day's cost by finish time.
CREATE INDEX batches_finished ON batches (finished_at);
