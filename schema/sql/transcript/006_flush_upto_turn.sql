-- A flush wants the turns closed before it was asked for. "Before" was by timestamp alone: a
-- clock stepped back (an NTP step after a thaw) gave a turn closed earlier a later timestamp,
-- and the flush was answered without it. The newest turn when the request was recorded says
-- "before" too (a request ingested late from the spool names more turns, never fewer).
ALTER TABLE flush_requests ADD COLUMN upto_turn INTEGER;
