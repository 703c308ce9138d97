-- Which lane curated a batch (issue 23): 'prompt' (a direct Messages call) or 'economy' (a
-- request in a Message Batch, at half price), and for the economy lane the Bridge's batch id
-- and the request's custom_id, so a result is traceable to the remote batch that carried it.
ALTER TABLE batches ADD COLUMN lane TEXT NOT NULL DEFAULT 'prompt'
    CHECK (lane IN ('prompt', 'economy'));
ALTER TABLE batches ADD COLUMN remote_id TEXT;
ALTER TABLE batches ADD COLUMN custom_id TEXT;
