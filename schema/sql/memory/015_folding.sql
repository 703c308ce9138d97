-- Letters unicode61 keeps as they are (ø, æ, œ, ß, ł, đ, ð, þ, ħ, ı, ŧ: no decomposition, so no
-- accent to remove) are folded to the plain letters a person types (issue 44: `wsd search
-- tromso` and `wsd forget tromso` found nothing of "Tromsø"). Each index reads its content
-- through a view that folds them (the expression is wsd.schema.stems.fold_sql's, pinned by
-- tests/test_search.py), and the query and every comparison of words fold the same way. The
-- indexes are made again and rebuilt from the views; no row of a table changes.
CREATE VIEW learnings_folded AS
    SELECT id, replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(content, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T') AS content, type FROM learnings;

CREATE VIEW turns_folded AS
    SELECT id,
        replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(prompt, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T') AS prompt,
        replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(response, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T') AS response,
        replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(tools, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T') AS tools
    FROM turns;

DROP TRIGGER learnings_ai;
DROP TRIGGER learnings_ad;
DROP TRIGGER learnings_au;
DROP TRIGGER turns_ai;
DROP TRIGGER turns_ad;
DROP TABLE learnings_vocab;
DROP TABLE turns_vocab;
DROP TABLE learnings_fts;
DROP TABLE turns_fts;

CREATE VIRTUAL TABLE learnings_fts USING fts5 (
    content,
    type UNINDEXED,
    content = 'learnings_folded',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER learnings_ai AFTER INSERT ON learnings BEGIN
    INSERT INTO learnings_fts (rowid, content, type)
        VALUES (new.id, replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(new.content, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T'), new.type);
END;

CREATE TRIGGER learnings_ad AFTER DELETE ON learnings BEGIN
    INSERT INTO learnings_fts (learnings_fts, rowid, content, type)
        VALUES ('delete', old.id, replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(old.content, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T'), old.type);
END;

CREATE TRIGGER learnings_au AFTER UPDATE OF content, type ON learnings BEGIN
    INSERT INTO learnings_fts (learnings_fts, rowid, content, type)
        VALUES ('delete', old.id, replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(old.content, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T'), old.type);
    INSERT INTO learnings_fts (rowid, content, type)
        VALUES (new.id, replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(new.content, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T'), new.type);
END;

CREATE VIRTUAL TABLE turns_fts USING fts5 (
    prompt,
    response,
    tools,
    content = 'turns_folded',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER turns_ai AFTER INSERT ON turns BEGIN
    INSERT INTO turns_fts (rowid, prompt, response, tools)
        VALUES (new.id, replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(new.prompt, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T'), replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(new.response, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T'), replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(new.tools, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T'));
END;

CREATE TRIGGER turns_ad AFTER DELETE ON turns BEGIN
    INSERT INTO turns_fts (turns_fts, rowid, prompt, response, tools)
        VALUES ('delete', old.id, replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(old.prompt, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T'), replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(old.response, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T'), replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(old.tools, 'ø', 'o'), 'Ø', 'O'), 'æ', 'ae'), 'Æ', 'AE'), 'œ', 'oe'), 'Œ', 'OE'), 'ß', 'ss'), 'ẞ', 'SS'), 'ł', 'l'), 'Ł', 'L'), 'đ', 'd'), 'Đ', 'D'), 'ð', 'd'), 'Ð', 'D'), 'þ', 'th'), 'Þ', 'TH'), 'ħ', 'h'), 'Ħ', 'H'), 'ı', 'i'), 'ŧ', 't'), 'Ŧ', 'T'));
END;

CREATE VIRTUAL TABLE learnings_vocab USING fts5vocab (learnings_fts, 'row');
CREATE VIRTUAL TABLE turns_vocab USING fts5vocab (turns_fts, 'row');

INSERT INTO learnings_fts (learnings_fts) VALUES ('rebuild');
INSERT INTO turns_fts (turns_fts) VALUES ('rebuild');
