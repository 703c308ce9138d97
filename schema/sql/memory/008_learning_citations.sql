-- Issue 25: memory a person can question. A learning's source turns say whether the curator
-- cited them (1) or they are all of its batch's turns (0: no citation, or one outside the
-- batch), so `wsd memory why` names the turns a line most likely came from; `wsd import`
-- may name them too. The batch index finds a curator revision's learnings.
ALTER TABLE learning_sources ADD COLUMN cited INTEGER NOT NULL DEFAULT 0 CHECK (cited IN (0, 1));

CREATE INDEX learnings_batch ON learnings (batch_id) WHERE batch_id IS NOT NULL;
