-- What the curator's calls to the Bridge cost, one row per HTTP request, written by the daemon
-- (and `wsd rebuild`) as each one happens: before it is sent (an estimate, so a call lost to
-- kill -9 mid-flight still counts), then settled by the answer's usage as soon as it arrives,
-- before the reply is read or applied. The daily spend cap (WSD_DAILY_BUDGET_USD) sums it.
--
-- Why here and not in memory.db: memory.db is derived and may be deleted or swapped by a
-- rebuild; the money was spent all the same. Found by the chaos soak: the stand-in Bridge
-- billed $41.42 while the batch ledger held $11.68 (answers lost to kills, truncation and
-- malformed replies were paid for and never reached the cap).
CREATE TABLE charges (
    id            INTEGER PRIMARY KEY,
    asked_at      REAL NOT NULL,              -- wall clock when sent: the day it counts toward
    answered_at   REAL,                       -- when the answer arrived (NULL: none came)
    -- asked: in flight (usd is the estimate); billed: the answer's usage; estimated: an answer
    -- whose usage was missing or implausible, or a request that may have been billed although
    -- no answer came (timeout, abandoned); void: the Bridge refused it (an error status).
    status        TEXT NOT NULL CHECK (status IN ('asked', 'billed', 'estimated', 'void')),
    usd           REAL NOT NULL CHECK (usd >= 0),
    input_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
    output_tokens INTEGER NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
    cache_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (cache_tokens >= 0),
    message_id    TEXT,
    purpose       TEXT NOT NULL DEFAULT 'curate',
    note          TEXT
) STRICT;

CREATE INDEX charges_asked ON charges (asked_at);
