-- One word for one thing (issue 42): the economy lane's Message Batches were "remote" batches
-- here and "Message Batches" everywhere else, and the turns the economy lane hands back to the
-- prompt lane were "prompt only" here and "released" everywhere else. Renamed in place
-- (SQLite rewrites the foreign keys and indexes that name them); no row changes.
ALTER TABLE remote_batches RENAME TO message_batches;
ALTER TABLE message_batches RENAME COLUMN remote_id TO message_batch_id;
ALTER TABLE remote_requests RENAME TO message_batch_requests;
ALTER TABLE message_batch_requests RENAME COLUMN remote_batch_id TO message_batch_row;
-- The turns a pending request carries: in flight (the loop does not send them again).
ALTER TABLE remote_turns RENAME TO in_flight_turns;
ALTER TABLE in_flight_turns RENAME COLUMN remote_batch_id TO message_batch_row;
ALTER TABLE prompt_only_turns RENAME TO released_turns;
