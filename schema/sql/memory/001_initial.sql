-- memory.db: everything derived from transcript.db. It can be deleted and
-- rebuilt by re-curating every observation (`wsd rebuild`).

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

-- Small daemon state that must survive restarts and sleep (backoff deadline,
-- counters). Key/value keeps later additions migration-free.
CREATE TABLE state (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at REAL NOT NULL
) STRICT;

-- The batch ledger: the truth about what has been curated. A batch's
-- learnings, actions, md revisions and this row commit in one transaction.
CREATE TABLE batches (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    transcript_identity  TEXT NOT NULL,
    first_observation_id INTEGER NOT NULL,
    last_observation_id  INTEGER NOT NULL,
    turns                INTEGER NOT NULL,
    status               TEXT NOT NULL CHECK (status IN ('done', 'failed', 'retried')),
    attempts             INTEGER NOT NULL DEFAULT 1,
    error                TEXT,
    model                TEXT,
    stop_reason          TEXT,
    input_tokens         INTEGER NOT NULL DEFAULT 0,
    output_tokens        INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens    INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens   INTEGER NOT NULL DEFAULT 0,
    cost_usd             REAL NOT NULL DEFAULT 0,
    latency_ms           REAL NOT NULL DEFAULT 0,
    started_at           REAL NOT NULL,
    finished_at          REAL NOT NULL
) STRICT;

CREATE INDEX batches_status ON batches (status, id);

-- Which batch covers each turn. The primary key makes "curated twice"
-- unrepresentable: a turn has exactly one covering batch (a parked turn that
-- is retried is re-pointed in the retry's transaction).
CREATE TABLE batch_turns (
    transcript_identity TEXT NOT NULL,
    observation_id      INTEGER NOT NULL,
    batch_id            INTEGER NOT NULL REFERENCES batches (id),
    PRIMARY KEY (transcript_identity, observation_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX batch_turns_batch ON batch_turns (batch_id);

CREATE TABLE learnings (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at            REAL NOT NULL,
    session_id            TEXT,
    type                  TEXT NOT NULL
        CHECK (type IN ('fact', 'pattern', 'correction', 'preference', 'tool_install')),
    content               TEXT NOT NULL,
    -- type + normalised content: exact duplicates are stored once.
    content_key           TEXT NOT NULL UNIQUE,
    source_observation_id INTEGER,
    confidence            REAL NOT NULL DEFAULT 1.0,
    batch_id              INTEGER REFERENCES batches (id),
    ref                   TEXT                        -- free-text reference (imports)
) STRICT;

CREATE INDEX learnings_created ON learnings (created_at);

-- Full-text index over learnings, external content, kept in sync by triggers.
CREATE VIRTUAL TABLE learnings_fts USING fts5 (
    content,
    type UNINDEXED,
    content = 'learnings',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER learnings_ai AFTER INSERT ON learnings BEGIN
    INSERT INTO learnings_fts (rowid, content, type) VALUES (new.id, new.content, new.type);
END;

CREATE TRIGGER learnings_ad AFTER DELETE ON learnings BEGIN
    INSERT INTO learnings_fts (learnings_fts, rowid, content, type)
        VALUES ('delete', old.id, old.content, old.type);
END;

CREATE TRIGGER learnings_au AFTER UPDATE OF content, type ON learnings BEGIN
    INSERT INTO learnings_fts (learnings_fts, rowid, content, type)
        VALUES ('delete', old.id, old.content, old.type);
    INSERT INTO learnings_fts (rowid, content, type) VALUES (new.id, new.content, new.type);
END;

CREATE TABLE pending_actions (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at         REAL NOT NULL,
    updated_at         REAL NOT NULL,
    content            TEXT NOT NULL,
    priority           INTEGER NOT NULL DEFAULT 2 CHECK (priority IN (0, 1, 2)),
    status             TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'completed', 'dismissed')),
    source             TEXT NOT NULL,                -- curator, watcher, canvas, ...
    dedup_key          TEXT NOT NULL,
    batch_id           INTEGER REFERENCES batches (id),
    source_learning_id INTEGER REFERENCES learnings (id)
) STRICT;

-- At most one open action per de-duplication key.
CREATE UNIQUE INDEX pending_actions_open_key ON pending_actions (dedup_key)
    WHERE status = 'pending';

-- Every version of every curated md file, with the batch that produced it.
-- The file on disk is materialised from the latest revision.
CREATE TABLE md_revisions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    file       TEXT NOT NULL CHECK (file IN ('tools.md', 'files.md', 'user.md', 'context.md')),
    content    TEXT NOT NULL,
    sha256     TEXT NOT NULL,
    created_at REAL NOT NULL,
    batch_id   INTEGER REFERENCES batches (id),
    source     TEXT NOT NULL
) STRICT;

CREATE INDEX md_revisions_latest ON md_revisions (file, id);

-- The workspace file index the watcher keeps (paths relative to the workspace).
CREATE TABLE workspace_files (
    path       TEXT PRIMARY KEY,
    size       INTEGER NOT NULL,
    mtime_ns   INTEGER NOT NULL,
    sha256     TEXT,
    first_seen REAL NOT NULL,
    last_seen  REAL NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX workspace_files_size ON workspace_files (size);

-- Canvas card <-> workspace file map.
CREATE TABLE canvas_cards (
    card_id            TEXT PRIMARY KEY,
    title              TEXT,
    card_type          TEXT,
    path               TEXT NOT NULL,
    status             TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    last_synced_sha256 TEXT,
    last_synced_at     REAL,
    created_at         REAL NOT NULL,
    updated_at         REAL NOT NULL
) STRICT;

CREATE UNIQUE INDEX canvas_cards_path ON canvas_cards (path);
