-- Items of a curator reply refused or downgraded because their words were not where their
-- kind needs them (issue 32: a preference held only by a web page's words is not the
-- person's). Counted per batch; each one is also a line of the batch's `refused` list.
ALTER TABLE batches ADD COLUMN ungrounded INTEGER NOT NULL DEFAULT 0;
