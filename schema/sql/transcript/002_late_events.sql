-- Late events (spooled, ingested after their turn was closed) and flush outcomes.
--
-- A late event joins its own turn: an observation no curator has seen yet is folded
-- again from its events; one already curated (or claimed by a batch in flight) gets an
-- addendum, a new observation that `amends` it and carries only what came late, so the
-- next batch curates it once like any other turn.

-- The turn an addendum adds to (NULL for an ordinary turn).
ALTER TABLE observations ADD COLUMN amends INTEGER REFERENCES observations (id);
-- Set when the daemon takes the turn into a batch: from then on the turn is never folded
-- again (a late event becomes an addendum), so what the curator saw is what was curated.
ALTER TABLE observations ADD COLUMN claimed_at REAL;

-- Placing a late event among its session's events by time.
CREATE INDEX events_session_ts ON events (session_id, ts);

-- Why a handled flush could not do all it should (an md file not written); NULL when it did.
ALTER TABLE flush_requests ADD COLUMN error TEXT;
