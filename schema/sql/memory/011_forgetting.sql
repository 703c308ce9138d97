-- Issue 33: forgetting that is complete.
--
-- forgets: the log of erasures: when, who asked (cli, conversation, retention), how much of
-- each kind went. Never the words.
CREATE TABLE forgets (
    id          INTEGER PRIMARY KEY,
    started_at  REAL NOT NULL,
    finished_at REAL,
    by          TEXT NOT NULL CHECK (by IN ('cli', 'conversation', 'retention')),
    counts_json TEXT NOT NULL DEFAULT '{}'
) STRICT;

-- The journal of an erasure in progress: its words, until it is done (then the row goes,
-- zeroed: secure_delete). A forget killed midway leaves its row; the next forget (or the
-- daemon) finishes it.
CREATE TABLE forget_journal (
    forget_id  INTEGER PRIMARY KEY REFERENCES forgets (id),
    words_json TEXT NOT NULL
) STRICT;

-- What must recognise forgotten words later (a Message Batch result that arrives after the
-- forget, a curator reply): a keyed hash of each phrase's stems, never the text. The key is
-- meta 'forget_key'.
CREATE TABLE forget_marks (
    digest TEXT PRIMARY KEY,
    words  INTEGER NOT NULL CHECK (words > 0)
) STRICT, WITHOUT ROWID;

INSERT OR IGNORE INTO meta (key, value) VALUES ('forget_key', lower(hex(randomblob(32))));


-- How many lines an erasure took out of a revision (history says that it happened there).
ALTER TABLE md_revisions ADD COLUMN erased INTEGER NOT NULL DEFAULT 0;

-- A FORGET the curator read in the person's own prompt (issue 33, item 5), waiting for the
-- daemon to run it, or (status 'confirm': it would erase more than a few items) for the
-- person to confirm through the pending action it opened. Gone once run or declined.
CREATE TABLE forget_requests (
    id         INTEGER PRIMARY KEY,
    words      TEXT NOT NULL,
    created_at REAL NOT NULL,
    batch_id   INTEGER REFERENCES batches (id),
    status     TEXT NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'confirm')),
    action_id  INTEGER REFERENCES pending_actions (id) ON DELETE SET NULL
) STRICT;

-- Every connection deletes with secure_delete on from this version: a database with no free
-- page now holds no stale bytes in free pages ever after. One with free pages (made by an
-- older version) is vacuumed once, by the first forget.
INSERT OR REPLACE INTO meta (key, value)
SELECT 'free_pages_zeroed', '1' WHERE (SELECT freelist_count FROM pragma_freelist_count()) = 0;
