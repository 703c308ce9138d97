-- Semantic matching (the optional [semantic] extra): one sentence vector per
-- learning and per turn, made by the daemon after curation (never on the hook
-- path). Derived data: `wsd rebuild` makes them again, and vectors made by
-- another model are dropped (meta 'vectors_model' names the model).

-- 384 int8 values: the unit vector scaled by 127 / its largest |value| (a
-- cosine needs no absolute scale). 384 bytes a row.
CREATE TABLE learning_vectors (
    learning_id INTEGER PRIMARY KEY REFERENCES learnings (id) ON DELETE CASCADE,
    vector      BLOB NOT NULL
) STRICT;

CREATE TABLE turn_vectors (
    turn_id INTEGER PRIMARY KEY REFERENCES turns (id) ON DELETE CASCADE,
    vector  BLOB NOT NULL
) STRICT;

-- A learning whose text changes needs a new vector; a retracted one (deleted)
-- loses its vector with the row.
CREATE TRIGGER learning_vectors_stale AFTER UPDATE OF content ON learnings BEGIN
    DELETE FROM learning_vectors WHERE learning_id = old.id;
END;
