-- Schema of an EMPTY claude-mem database, made by claude-mem 13.25.3's own code
-- (worker DatabaseManager.initialize() under bun 1.4.5); see README.md.
-- Statements are sqlite_master.sql verbatim, in sqlite_master order (creation order).
-- Left out (they are made automatically): sqlite_sequence (by AUTOINCREMENT) and the
-- FTS5 shadow tables (by each CREATE VIRTUAL TABLE ... USING fts5).
-- claude-mem's connection settings (not statements here):
--   PRAGMA journal_mode = WAL (file header of the empty database: wal)
--   PRAGMA auto_vacuum = INCREMENTAL (value 2; set it before the
--     first table is made); page_size 4096
--   per connection: PRAGMA foreign_keys = ON, synchronous = NORMAL, busy_timeout
-- Replaying this file with sqlite3.executescript gives the same sqlite_master.

CREATE TABLE schema_versions (
        id INTEGER PRIMARY KEY,
        version INTEGER UNIQUE NOT NULL,
        applied_at TEXT NOT NULL
      );
CREATE TABLE sdk_sessions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        content_session_id TEXT NOT NULL,
        memory_session_id TEXT UNIQUE,
        project TEXT NOT NULL,
        platform_source TEXT NOT NULL DEFAULT 'claude',
        user_prompt TEXT,
        started_at TEXT NOT NULL,
        started_at_epoch INTEGER NOT NULL,
        completed_at TEXT,
        completed_at_epoch INTEGER,
        status TEXT CHECK(status IN ('active', 'completed', 'failed')) NOT NULL DEFAULT 'active'
      , worker_port INTEGER, prompt_counter INTEGER DEFAULT 0, custom_title TEXT, observed_model TEXT, observed_billing TEXT);
-- (skipped) CREATE TABLE sqlite_sequence(name,seq);
CREATE INDEX idx_sdk_sessions_claude_id ON sdk_sessions(content_session_id);
CREATE INDEX idx_sdk_sessions_sdk_id ON sdk_sessions(memory_session_id);
CREATE INDEX idx_sdk_sessions_project ON sdk_sessions(project);
CREATE INDEX idx_sdk_sessions_status ON sdk_sessions(status);
CREATE INDEX idx_sdk_sessions_started ON sdk_sessions(started_at_epoch DESC);
CREATE TABLE "session_summaries" (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_session_id TEXT NOT NULL,
        project TEXT NOT NULL,
        request TEXT,
        investigated TEXT,
        learned TEXT,
        completed TEXT,
        next_steps TEXT,
        files_read TEXT,
        files_edited TEXT,
        notes TEXT,
        prompt_number INTEGER,
        created_at TEXT NOT NULL,
        created_at_epoch INTEGER NOT NULL, discovery_tokens INTEGER DEFAULT 0, merged_into_project TEXT, synced_at INTEGER, origin_device_id TEXT, origin_local_id TEXT, sync_rev TEXT NOT NULL DEFAULT '1',
        FOREIGN KEY(memory_session_id) REFERENCES sdk_sessions(memory_session_id) ON DELETE CASCADE ON UPDATE CASCADE
      );
CREATE INDEX idx_session_summaries_sdk_session ON session_summaries(memory_session_id);
CREATE INDEX idx_session_summaries_project ON session_summaries(project);
CREATE INDEX idx_session_summaries_created ON session_summaries(created_at_epoch DESC);
CREATE TABLE "observations" (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_session_id TEXT NOT NULL,
        project TEXT NOT NULL,
        text TEXT,
        type TEXT NOT NULL,
        title TEXT,
        subtitle TEXT,
        facts TEXT,
        narrative TEXT,
        concepts TEXT,
        files_read TEXT,
        files_modified TEXT,
        prompt_number INTEGER,
        created_at TEXT NOT NULL,
        created_at_epoch INTEGER NOT NULL, discovery_tokens INTEGER DEFAULT 0, content_hash TEXT, generated_by_model TEXT, relevance_count INTEGER DEFAULT 0, merged_into_project TEXT, agent_type TEXT, agent_id TEXT, metadata TEXT, synced_at INTEGER, origin_device_id TEXT, origin_local_id TEXT, sync_rev TEXT NOT NULL DEFAULT '1',
        FOREIGN KEY(memory_session_id) REFERENCES sdk_sessions(memory_session_id) ON DELETE CASCADE ON UPDATE CASCADE
      );
CREATE INDEX idx_observations_sdk_session ON observations(memory_session_id);
CREATE INDEX idx_observations_project ON observations(project);
CREATE INDEX idx_observations_type ON observations(type);
CREATE INDEX idx_observations_created ON observations(created_at_epoch DESC);
CREATE VIRTUAL TABLE user_prompts_fts USING fts5(
        prompt_text,
        content='user_prompts',
        content_rowid='id'
      );
-- (shadow, made by fts5) CREATE TABLE 'user_prompts_fts_data'(id INTEGER PRIMARY KEY, block BLOB);
-- (shadow, made by fts5) CREATE TABLE 'user_prompts_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;
-- (shadow, made by fts5) CREATE TABLE 'user_prompts_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);
-- (shadow, made by fts5) CREATE TABLE 'user_prompts_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE pending_messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_db_id INTEGER NOT NULL,
        content_session_id TEXT NOT NULL,
        message_type TEXT NOT NULL CHECK(message_type IN ('observation', 'summarize')),
        tool_name TEXT,
        tool_input TEXT,
        tool_response TEXT,
        cwd TEXT,
        last_user_message TEXT,
        last_assistant_message TEXT,
        prompt_number INTEGER,
        status TEXT NOT NULL DEFAULT 'pending' CHECK(status IN ('pending', 'processing')),
        created_at_epoch INTEGER NOT NULL, agent_type TEXT, agent_id TEXT, tool_use_id TEXT,
        FOREIGN KEY (session_db_id) REFERENCES sdk_sessions(id) ON DELETE CASCADE
      );
CREATE INDEX idx_pending_messages_session ON pending_messages(session_db_id);
CREATE INDEX idx_pending_messages_status ON pending_messages(status);
CREATE INDEX idx_pending_messages_claude_session ON pending_messages(content_session_id);
CREATE INDEX idx_observations_content_hash ON observations(content_hash, created_at_epoch);
CREATE INDEX idx_sdk_sessions_platform_source ON sdk_sessions(platform_source);
CREATE INDEX idx_observations_merged_into ON observations(merged_into_project);
CREATE INDEX idx_summaries_merged_into ON session_summaries(merged_into_project);
CREATE INDEX idx_observations_agent_type ON observations(agent_type);
CREATE INDEX idx_observations_agent_id ON observations(agent_id);
CREATE UNIQUE INDEX ux_observations_session_hash
      ON observations(memory_session_id, content_hash)
    ;
CREATE UNIQUE INDEX ux_sdk_sessions_platform_content ON sdk_sessions(platform_source, content_session_id);
CREATE TABLE "user_prompts" (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_db_id INTEGER,
        content_session_id TEXT NOT NULL,
        prompt_number INTEGER NOT NULL,
        prompt_text TEXT NOT NULL,
        created_at TEXT NOT NULL,
        created_at_epoch INTEGER NOT NULL, synced_at INTEGER, origin_device_id TEXT, origin_local_id TEXT, sync_rev TEXT NOT NULL DEFAULT '1',
        FOREIGN KEY(session_db_id) REFERENCES sdk_sessions(id) ON DELETE CASCADE
      );
CREATE INDEX idx_user_prompts_session ON user_prompts(session_db_id);
CREATE INDEX idx_user_prompts_claude_session ON user_prompts(content_session_id);
CREATE INDEX idx_user_prompts_created ON user_prompts(created_at_epoch DESC);
CREATE INDEX idx_user_prompts_prompt_number ON user_prompts(prompt_number);
CREATE INDEX idx_user_prompts_lookup ON user_prompts(session_db_id, prompt_number);
CREATE INDEX idx_user_prompts_content_lookup ON user_prompts(content_session_id, prompt_number);
CREATE TRIGGER user_prompts_ai AFTER INSERT ON user_prompts BEGIN
          INSERT INTO user_prompts_fts(rowid, prompt_text)
          VALUES (new.id, new.prompt_text);
        END;
CREATE TRIGGER user_prompts_ad AFTER DELETE ON user_prompts BEGIN
          INSERT INTO user_prompts_fts(user_prompts_fts, rowid, prompt_text)
          VALUES('delete', old.id, old.prompt_text);
        END;
CREATE TRIGGER user_prompts_au AFTER UPDATE ON user_prompts BEGIN
          INSERT INTO user_prompts_fts(user_prompts_fts, rowid, prompt_text)
          VALUES('delete', old.id, old.prompt_text);
          INSERT INTO user_prompts_fts(rowid, prompt_text)
          VALUES (new.id, new.prompt_text);
        END;
CREATE UNIQUE INDEX ux_pending_session_tool
      ON pending_messages(session_db_id, tool_use_id)
      WHERE tool_use_id IS NOT NULL
    ;
CREATE INDEX idx_observations_unsynced ON observations(id) WHERE synced_at IS NULL;
CREATE INDEX idx_session_summaries_unsynced ON session_summaries(id) WHERE synced_at IS NULL;
CREATE INDEX idx_user_prompts_unsynced ON user_prompts(id) WHERE synced_at IS NULL;
CREATE UNIQUE INDEX ux_observations_origin
        ON observations(origin_device_id, origin_local_id)
        WHERE origin_device_id IS NOT NULL
      ;
CREATE UNIQUE INDEX ux_session_summaries_origin
        ON session_summaries(origin_device_id, origin_local_id)
        WHERE origin_device_id IS NOT NULL
      ;
CREATE UNIQUE INDEX ux_user_prompts_origin
        ON user_prompts(origin_device_id, origin_local_id)
        WHERE origin_device_id IS NOT NULL
      ;
CREATE TABLE sync_state (
        k TEXT PRIMARY KEY,
        v TEXT
      );
CREATE TABLE sync_outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        op_uuid TEXT NOT NULL UNIQUE,
        rev TEXT NOT NULL DEFAULT '1',
        body TEXT NOT NULL,
        canonical_body TEXT,
        operation_sha256 TEXT,
        created_at_epoch INTEGER NOT NULL
      );
CREATE TABLE sync_entity_heads (
        entity_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('observation', 'summary', 'prompt')),
        origin_device_id TEXT NOT NULL,
        origin_local_id TEXT NOT NULL,
        entity_rev TEXT NOT NULL,
        operation_sha256 TEXT NOT NULL,
        deleted INTEGER NOT NULL CHECK (deleted IN (0, 1)),
        updated_at_epoch INTEGER NOT NULL
      );
CREATE TABLE sync_content_outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        entity_id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('observation', 'summary', 'prompt')),
        origin_local_id TEXT NOT NULL,
        entity_rev TEXT NOT NULL,
        body TEXT NOT NULL,
        operation_sha256 TEXT NOT NULL,
        deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
        created_at_epoch INTEGER NOT NULL,
        UNIQUE(entity_id, entity_rev)
      );
CREATE TABLE sync_dead_letter (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        lane TEXT NOT NULL CHECK (lane IN ('content', 'mutation')),
        queue_key TEXT NOT NULL,
        kind TEXT,
        origin_local_id TEXT,
        entity_rev TEXT,
        reason TEXT NOT NULL,
        raw_body TEXT,
        created_at_epoch INTEGER NOT NULL,
        UNIQUE(lane, queue_key, entity_rev, reason)
      );
CREATE TABLE sync_launch_exclusions (
        kind TEXT NOT NULL CHECK (kind IN ('observation', 'summary', 'prompt')),
        origin_local_id TEXT NOT NULL,
        through_rev TEXT NOT NULL,
        PRIMARY KEY (kind, origin_local_id)
      );
CREATE TABLE tool_uses (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      tool_use_id TEXT NOT NULL,
      content_session_id TEXT NOT NULL,
      memory_session_id TEXT,
      session_db_id INTEGER,
      project TEXT NOT NULL,
      platform_source TEXT NOT NULL DEFAULT 'claude',
      tool_name TEXT NOT NULL,
      tool_input TEXT,
      tool_response TEXT,
      cwd TEXT,
      prompt_number INTEGER,
      agent_type TEXT,
      agent_id TEXT,
      observation_id INTEGER,
      or_generation_id TEXT,
      or_session_id TEXT,
      content_hash TEXT,
      created_at TEXT NOT NULL,
      created_at_epoch INTEGER NOT NULL,
      UNIQUE(content_session_id, tool_use_id)
    );
CREATE INDEX idx_tool_uses_project ON tool_uses(project);
CREATE INDEX idx_tool_uses_memory_session ON tool_uses(memory_session_id);
CREATE INDEX idx_tool_uses_content_session ON tool_uses(content_session_id);
CREATE INDEX idx_tool_uses_session_db_id ON tool_uses(session_db_id);
CREATE INDEX idx_tool_uses_tool_name ON tool_uses(tool_name);
CREATE INDEX idx_tool_uses_created_at_epoch ON tool_uses(created_at_epoch);
CREATE INDEX idx_tool_uses_observation_id ON tool_uses(observation_id);
CREATE INDEX idx_tool_uses_or_generation_id ON tool_uses(or_generation_id);
CREATE TABLE telegram_wrapups (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        platform_source TEXT NOT NULL,
        content_session_id TEXT NOT NULL,
        project TEXT NOT NULL,
        route_key TEXT NOT NULL,
        summary_created_at_epoch INTEGER NOT NULL,
        status TEXT NOT NULL CHECK(status IN ('claimed', 'sent')),
        claimed_at_epoch INTEGER NOT NULL,
        sent_at_epoch INTEGER,
        UNIQUE(platform_source, content_session_id, project, route_key)
      );
CREATE INDEX idx_telegram_wrapups_platform_content ON telegram_wrapups(platform_source, content_session_id);
CREATE VIRTUAL TABLE observations_fts USING fts5(
        title,
        subtitle,
        narrative,
        text,
        facts,
        concepts,
        content='observations',
        content_rowid='id'
      );
-- (shadow, made by fts5) CREATE TABLE 'observations_fts_data'(id INTEGER PRIMARY KEY, block BLOB);
-- (shadow, made by fts5) CREATE TABLE 'observations_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;
-- (shadow, made by fts5) CREATE TABLE 'observations_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);
-- (shadow, made by fts5) CREATE TABLE 'observations_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;
CREATE TRIGGER observations_ai AFTER INSERT ON observations BEGIN
        INSERT INTO observations_fts(rowid, title, subtitle, narrative, text, facts, concepts)
        VALUES (new.id, new.title, new.subtitle, new.narrative, new.text, new.facts, new.concepts);
      END;
CREATE TRIGGER observations_ad AFTER DELETE ON observations BEGIN
        INSERT INTO observations_fts(observations_fts, rowid, title, subtitle, narrative, text, facts, concepts)
        VALUES('delete', old.id, old.title, old.subtitle, old.narrative, old.text, old.facts, old.concepts);
      END;
CREATE TRIGGER observations_au AFTER UPDATE ON observations BEGIN
        INSERT INTO observations_fts(observations_fts, rowid, title, subtitle, narrative, text, facts, concepts)
        VALUES('delete', old.id, old.title, old.subtitle, old.narrative, old.text, old.facts, old.concepts);
        INSERT INTO observations_fts(rowid, title, subtitle, narrative, text, facts, concepts)
        VALUES (new.id, new.title, new.subtitle, new.narrative, new.text, new.facts, new.concepts);
      END;
CREATE VIRTUAL TABLE session_summaries_fts USING fts5(
        request,
        investigated,
        learned,
        completed,
        next_steps,
        notes,
        content='session_summaries',
        content_rowid='id'
      );
-- (shadow, made by fts5) CREATE TABLE 'session_summaries_fts_data'(id INTEGER PRIMARY KEY, block BLOB);
-- (shadow, made by fts5) CREATE TABLE 'session_summaries_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;
-- (shadow, made by fts5) CREATE TABLE 'session_summaries_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);
-- (shadow, made by fts5) CREATE TABLE 'session_summaries_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;
CREATE TRIGGER session_summaries_ai AFTER INSERT ON session_summaries BEGIN
        INSERT INTO session_summaries_fts(rowid, request, investigated, learned, completed, next_steps, notes)
        VALUES (new.id, new.request, new.investigated, new.learned, new.completed, new.next_steps, new.notes);
      END;
CREATE TRIGGER session_summaries_ad AFTER DELETE ON session_summaries BEGIN
        INSERT INTO session_summaries_fts(session_summaries_fts, rowid, request, investigated, learned, completed, next_steps, notes)
        VALUES('delete', old.id, old.request, old.investigated, old.learned, old.completed, old.next_steps, old.notes);
      END;
CREATE TRIGGER session_summaries_au AFTER UPDATE ON session_summaries BEGIN
        INSERT INTO session_summaries_fts(session_summaries_fts, rowid, request, investigated, learned, completed, next_steps, notes)
        VALUES('delete', old.id, old.request, old.investigated, old.learned, old.completed, old.next_steps, old.notes);
        INSERT INTO session_summaries_fts(rowid, request, investigated, learned, completed, next_steps, notes)
        VALUES (new.id, new.request, new.investigated, new.learned, new.completed, new.next_steps, new.notes);
      END;

-- ==================================================================
-- schema_versions rows: the migrations claude-mem recorded as applied
-- (applied_at is the wall-clock time of the run that made the empty database)
-- ==================================================================
INSERT INTO schema_versions (id, version, applied_at) VALUES (1, 4, '2026-11-28T09:28:21.973Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (2, 5, '2026-11-28T09:28:21.974Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (3, 6, '2026-11-28T09:28:21.974Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (4, 7, '2026-11-28T09:28:21.981Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (5, 8, '2026-11-28T09:28:21.982Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (6, 9, '2026-11-28T09:28:22.007Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (7, 10, '2026-11-28T09:28:22.009Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (8, 11, '2026-11-28T09:28:22.010Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (9, 16, '2026-11-28T09:28:22.010Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (10, 17, '2026-11-28T09:28:22.016Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (11, 20, '2026-11-28T09:28:22.016Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (12, 21, '2026-11-28T09:28:22.017Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (13, 22, '2026-11-28T09:28:22.017Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (14, 23, '2026-11-28T09:28:22.018Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (15, 24, '2026-11-28T09:28:22.018Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (16, 26, '2026-11-28T09:28:22.019Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (17, 27, '2026-11-28T09:28:22.028Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (18, 29, '2026-11-28T09:28:22.029Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (19, 30, '2026-11-28T09:28:22.029Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (20, 31, '2026-11-28T09:28:22.030Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (21, 28, '2026-11-28T09:28:22.031Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (22, 32, '2026-11-28T09:28:22.032Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (23, 33, '2026-11-28T09:28:22.033Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (24, 34, '2026-11-28T09:28:22.038Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (25, 35, '2026-11-28T09:28:22.039Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (26, 39, '2026-11-28T09:28:22.046Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (27, 41, '2026-11-28T09:28:22.054Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (28, 42, '2026-11-28T09:28:22.055Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (29, 44, '2026-11-28T09:28:22.060Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (30, 45, '2026-11-28T09:28:22.060Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (31, 46, '2026-11-28T09:28:22.062Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (32, 47, '2026-11-28T09:28:22.062Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (33, 48, '2026-11-28T09:28:22.062Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (34, 49, '2026-11-28T09:28:22.079Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (35, 50, '2026-11-28T09:28:22.080Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (36, 51, '2026-11-28T09:28:22.081Z');
INSERT INTO schema_versions (id, version, applied_at) VALUES (37, 52, '2026-11-28T09:28:22.082Z');
