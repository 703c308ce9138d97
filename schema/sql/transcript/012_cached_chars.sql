-- How many of a Message Batch request's characters its cache breakpoint covers (issue 46):
-- a result read after a restart is judged against what the daemon knows it sent, and only
-- that prefix may be billed as a cache read or write (0: no breakpoint, or recorded before).
ALTER TABLE message_batch_requests
    ADD COLUMN cached_chars INTEGER NOT NULL DEFAULT 0 CHECK (cached_chars >= 0);
