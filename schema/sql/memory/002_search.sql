-- Search: the turn index, vocabularies for query weighting, neighbour lookups.
-- Everything here is derived (from learnings, or from transcript.db's
-- observations) and is rebuilt by `wsd rebuild`.

-- Per-term document counts of the learnings index. search_memory reads them to
-- weight query terms (IDF) and to keep very common terms from flooding the
-- candidate set of a large archive.
CREATE VIRTUAL TABLE learnings_vocab USING fts5vocab (learnings_fts, 'row');

-- A learning's neighbours are the learnings of the same session next to it:
-- search lends part of a hit's score to them (what was learned together is
-- usually about the same thing).
CREATE INDEX learnings_session ON learnings (session_id, id) WHERE session_id IS NOT NULL;

-- One row per closed turn of transcript.db, copied by the daemon after the
-- turn closes: the archive search_memory reaches beyond the learnings. The text
-- is split in three parts so a snippet can say who said what; memory tool calls
-- (their input and output) are left out so searching never finds searching.
CREATE TABLE turns (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    transcript_identity TEXT NOT NULL,
    observation_id      INTEGER NOT NULL,
    session_id          TEXT NOT NULL,
    sequence_num        INTEGER NOT NULL,
    created_at          REAL NOT NULL,
    prompt              TEXT NOT NULL DEFAULT '',
    response            TEXT NOT NULL DEFAULT '',
    tools               TEXT NOT NULL DEFAULT '',
    UNIQUE (transcript_identity, observation_id)
) STRICT;

CREATE INDEX turns_session ON turns (session_id, sequence_num);
CREATE INDEX turns_created ON turns (created_at);

CREATE VIRTUAL TABLE turns_fts USING fts5 (
    prompt,
    response,
    tools,
    content = 'turns',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER turns_ai AFTER INSERT ON turns BEGIN
    INSERT INTO turns_fts (rowid, prompt, response, tools)
        VALUES (new.id, new.prompt, new.response, new.tools);
END;

CREATE TRIGGER turns_ad AFTER DELETE ON turns BEGIN
    INSERT INTO turns_fts (turns_fts, rowid, prompt, response, tools)
        VALUES ('delete', old.id, old.prompt, old.response, old.tools);
END;

CREATE VIRTUAL TABLE turns_vocab USING fts5vocab (turns_fts, 'row');
