-- What the guards refused of a batch's reply, counted by kind (JSON object: "loss" and
-- "erosion" edits held back, other "edit"s refused, "ungrounded" items, "unread_lines" of
-- the reply: not in the format or past the parser's caps): what `wsd metrics` sums for a
-- fleet's alerts. The reasons themselves stay in `refused` (they quote the reply, so never
-- in a metric). NULL: nothing refused.
ALTER TABLE batches ADD COLUMN refusal_kinds TEXT;
