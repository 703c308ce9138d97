-- Issue 43: a request to forget stands on the person's own request, and nothing is refused
-- silently. Each request now says whether the person's own words named what it erases
-- (`said`: 0 when the curator resolved "forget my dentist's name" to "Dr. Okafor" from
-- memory; the daemon then asks first, whatever the size), where they asked (`asked_in`, as
-- search names a turn: T12), and a refused one (`status` 'refused', no words kept) why, so
-- the boot context and `wsd status` can say so. SQLite cannot change a CHECK: the table is
-- made again with the rows it had.
CREATE TABLE forget_requests_new (
    id         INTEGER PRIMARY KEY,
    words      TEXT NOT NULL,
    created_at REAL NOT NULL,
    batch_id   INTEGER REFERENCES batches (id),
    status     TEXT NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'confirm', 'refused')),
    action_id  INTEGER REFERENCES pending_actions (id) ON DELETE SET NULL,
    said       INTEGER NOT NULL DEFAULT 1 CHECK (said IN (0, 1)),
    asked_in   TEXT NOT NULL DEFAULT '',
    reason     TEXT
) STRICT;
INSERT INTO forget_requests_new (id, words, created_at, batch_id, status, action_id)
SELECT id, words, created_at, batch_id, status, action_id FROM forget_requests;
DROP TABLE forget_requests;
ALTER TABLE forget_requests_new RENAME TO forget_requests;
