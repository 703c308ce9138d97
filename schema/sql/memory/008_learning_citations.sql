-- Issue 25: memory a person can question. A learning's source turns say whether the curator
-- cited them (1) or they are all of its batch's turns (0: no citation, or one outside the
-- batch), so `wsd memory why` names the turns a line most likely came from; `wsd import`
-- may name them too. The batch index finds a curator revision's learnings.
ALTER TABLE learning_sources ADD COLUMN cited INTEGER NOT NULL DEFAULT 0 CHECK (cited IN (0, 1));

CREATE INDEX learnings_batch ON learnings (batch_id) WHERE batch_id IS NOT NULL;

-- Before this, a learning with one source row had cited it (a learning citing none, or a
-- turn outside its batch, got every turn of its batch; a one-turn batch reads the same).
UPDATE learning_sources SET cited = 1
WHERE learning_id IN
    (SELECT learning_id FROM learning_sources GROUP BY learning_id HAVING count(*) = 1);
