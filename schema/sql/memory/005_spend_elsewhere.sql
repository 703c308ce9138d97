-- Curator spend that no batch row of this database carries, for the daily cap
-- (WSD_DAILY_BUDGET_USD sums batches and this). `wsd rebuild` writes it: the
-- live batches it replaces (their spend happened), and its own calls (dated
-- now, while its batches are dated by their turns). Found by the chaos soak: a
-- rebuild reset the day's spend to what its own old-dated batches showed.
CREATE TABLE spend_elsewhere (
    id   INTEGER PRIMARY KEY,
    at   REAL NOT NULL,
    usd  REAL NOT NULL,
    why  TEXT NOT NULL
) STRICT;

CREATE INDEX spend_elsewhere_at ON spend_elsewhere (at);
