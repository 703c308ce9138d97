-- One word for one thing (issue 42): a batch's Message Batch id was its "remote" id, and a
-- file whose removals wait for erosion was "held" (a word the replica's hold for an erasure
-- and the turns a Message Batch carries also used). Renamed in place.
ALTER TABLE batches RENAME COLUMN remote_id TO message_batch_id;
UPDATE state SET key = 'eroding:' || substr(key, 6) WHERE key LIKE 'held:%';
