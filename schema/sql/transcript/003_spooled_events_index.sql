-- The loop asks of every pending turn whether it holds a spooled event (such a turn rests
-- until its burst is in): without an index that was a scan of all events per turn, and a
-- 10,000-turn backlog drained at 51 turns/s instead of 500 (make bench, drain). Partial:
-- only spooled events (rare) are indexed, so a hook's direct insert pays nothing for it.
CREATE INDEX events_spooled ON events (observation_id) WHERE via = 'spool';
