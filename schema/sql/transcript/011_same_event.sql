-- The same hook event arriving twice (the plugin and .claude/settings.json both wiring
-- wsd-hook; issue 45): the writer looks for an identical event of the session within two
-- seconds (wsd.schema.transcript.record) through this index.
CREATE INDEX events_session_time ON events (session_id, ts);
