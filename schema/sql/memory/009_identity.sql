-- Issue 30: identity of this memory.db file, as transcript.db has one. Whoever keeps a
-- cursor into it (`wsd rebuild` reads the people's revisions after the last id it saw)
-- compares it, so a memory.db deleted and recreated (or restored from a backup) meanwhile
-- is noticed: its revision ids start again from 1, and a rebuild swapped over it would
-- take the person's revisions it holds away. A rebuilt memory.db gets its own (its ids
-- are new too).
INSERT OR IGNORE INTO meta (key, value) VALUES
    ('identity', (SELECT lower(
        substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-4' || substr(h, 14, 3) || '-' ||
        substr('89ab', 1 + (abs(random()) % 4), 1) || substr(h, 18, 3) || '-' || substr(h, 21, 12))
        FROM (SELECT hex(randomblob(16)) AS h)));
