-- The daily cap now sums transcript.db's `charges` (every request the Bridge billed, recorded
-- as it happened, rebuilds and kills included), so what `wsd rebuild` had to carry here is
-- counted there.
DROP TABLE spend_elsewhere;
