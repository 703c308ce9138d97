-- What a forget saw when it read every copy back after the erasure (issue 44: the report
-- and `wsd status` said what the forget meant to do, not what it checked). NULL: not read
-- back (a forget of whole turns, or one from before this column); '{}': nothing still held
-- the words; else how many of each kind still did (never which, never the words).
ALTER TABLE forgets ADD COLUMN still_json TEXT;
