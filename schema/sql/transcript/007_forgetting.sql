-- Issue 33 (forgetting). A Message Batch whose requests held words the person asked to forget has its
-- results deleted at the Bridge (messages.batches.delete) once it is settled and applied.
-- 0: nothing to do; 1: delete when settled; 2: deleted (or the Bridge no longer had it).
ALTER TABLE remote_batches ADD COLUMN purge INTEGER NOT NULL DEFAULT 0
    CHECK (purge IN (0, 1, 2));

-- When a turn was erased whole (`wsd forget T88`, --session, --between, or the transcript
-- retention): rebuild says how many turns it could not re-read, retention skips them.
ALTER TABLE observations ADD COLUMN erased_at REAL;

-- As in memory.db (011): free pages hold nothing stale from here on, if there are none now.
INSERT OR REPLACE INTO meta (key, value)
SELECT 'free_pages_zeroed', '1' WHERE (SELECT freelist_count FROM pragma_freelist_count()) = 0;

-- Every backup `wsd backup` took, recorded when taken (here, not in memory.db, which may be
-- deleted and re-derived): a forget erases there too, or names the backup as still holding
-- the words.
CREATE TABLE backups (
    path     TEXT PRIMARY KEY,
    taken_at REAL NOT NULL
) STRICT;
