-- transcript.db: the black box recorder. Hooks append here; nothing is ever
-- rewritten except the `processed` marker on observations (and the link from
-- an event to the observation that closed it).

-- Identity of this database file: whoever keeps a cursor into it (memory.db's
-- ledger) compares it, so a recreated transcript.db is noticed, not misread.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

INSERT INTO meta (key, value) VALUES
    ('identity', (SELECT lower(
        substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-4' || substr(h, 14, 3) || '-' ||
        substr('89ab', 1 + (abs(random()) % 4), 1) || substr(h, 18, 3) || '-' || substr(h, 21, 12))
        FROM (SELECT hex(randomblob(16)) AS h))),
    ('created_at', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));

CREATE TABLE sessions (
    id                TEXT PRIMARY KEY,
    started_at        REAL NOT NULL,
    ended_at          REAL,
    last_event_at     REAL NOT NULL,
    message_count     INTEGER NOT NULL DEFAULT 0,   -- user prompts
    observation_count INTEGER NOT NULL DEFAULT 0,   -- closed turns
    source            TEXT,                         -- SessionStart source (startup, resume, ...)
    cwd               TEXT
) STRICT;

-- One row per hook call, written at once. `uid` is minted by the hook so that
-- re-ingesting a spool file after a crash cannot duplicate an event.
CREATE TABLE events (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    uid            TEXT NOT NULL UNIQUE,
    ts             REAL NOT NULL,
    session_id     TEXT NOT NULL REFERENCES sessions (id),
    kind           TEXT NOT NULL,      -- the hook event name
    tool_name      TEXT,
    payload        TEXT NOT NULL,      -- sanitised JSON of the fields we keep
    observation_id INTEGER REFERENCES observations (id),
    via            TEXT NOT NULL DEFAULT 'direct' CHECK (via IN ('direct', 'spool'))
) STRICT;

-- The open (not yet closed into a turn) activity of a session.
CREATE INDEX events_open ON events (session_id, id) WHERE observation_id IS NULL;

-- One row per agent turn: the user message, every tool call, the final answer.
-- AUTOINCREMENT: ids are never reused, so a ledger entry can never point at a
-- different turn than the one it curated.
CREATE TABLE observations (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    timestamp       REAL NOT NULL,
    session_id      TEXT NOT NULL REFERENCES sessions (id),
    sequence_num    INTEGER NOT NULL,
    user_message    TEXT,
    tool_calls_json TEXT NOT NULL DEFAULT '[]',
    agent_response  TEXT,
    closed_by       TEXT NOT NULL
        CHECK (closed_by IN ('stop', 'next_prompt', 'quiet', 'session_end')),
    processed       INTEGER NOT NULL DEFAULT 0 CHECK (processed IN (0, 1)),
    UNIQUE (session_id, sequence_num)
) STRICT;

CREATE INDEX observations_pending ON observations (id) WHERE processed = 0;

-- PreCompact, SessionEnd and `wsd flush` ask the daemon to curate now.
CREATE TABLE flush_requests (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    ts         REAL NOT NULL,
    session_id TEXT,
    reason     TEXT NOT NULL,
    handled_at REAL
) STRICT;

CREATE INDEX flush_requests_open ON flush_requests (id) WHERE handled_at IS NULL;
