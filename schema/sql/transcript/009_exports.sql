-- Every export `wsd export` wrote, recorded as a backup is (issue 44: an export in the
-- watched documents/ kept forgotten words, and the forget named none): a forget erases the
-- words there too, or names the export as still holding them.
CREATE TABLE exports (
    path     TEXT PRIMARY KEY,
    format   TEXT NOT NULL,
    taken_at REAL NOT NULL
) STRICT;
