"""The learnings' SQL verbs outside curation: the learnings a new session and the curator are
shown, and ``wsd forget``.

Each verb takes an open connection (the :class:`Learnings` facet at the end,
``store.learnings``, opens them, one per unit of work); an import is the transfer's
(:func:`wsd.daemon.store.transfer.import_incoming`: one transaction, all or nothing):

* :func:`recent_learnings` reads what a new session starts with, :func:`related_learnings`
  what the curator is shown beside a batch.
* :func:`retract` forgets a learning for good.
"""

from __future__ import annotations

import re

import apsw

from wsd import schema
from wsd.daemon.store.verbs import Facet, reads, uses

# -- what a new session and the curator are shown ---------------------------------------------


def recent_learnings(m: apsw.Connection, since: float, limit: int) -> list[tuple[str, float, str]]:
    """(type, created_at, content) of current learnings since ``since``, newest first
    (a superseded learning is left out: its successor says it better)."""
    rows = schema.rows(
        m,
        "SELECT type, created_at, content FROM learnings WHERE created_at >= ?"
        " AND superseded_by IS NULL ORDER BY created_at DESC, id DESC LIMIT ?",
        (since, max(0, limit)),
    )
    return [(str(kind), float(ts), str(text)) for kind, ts, text in rows]


def learnings(m: apsw.Connection) -> list[tuple[str, str]]:
    """Every stored learning as (type, content), oldest first (the demo prints them)."""
    return [
        (str(k), str(c))
        for k, c in schema.rows(m, "SELECT type, content FROM learnings ORDER BY id")
    ]


_WORD = re.compile(r"[^\W\d_]{3,}")
#: Words too common to say what a batch is about (the related-learnings query drops them).
_COMMON_WORDS = (
    "the and for you that with this are was have not but what all can your from they will"
    " one about there which when would their been has more into some could them than"
    " then its only also how our out use just like get got did does done please thanks"
    " okay yes now here need want make file files user agent turn"
)
_COMMON = frozenset(_COMMON_WORDS.split())


def related_query(text: str, words: int) -> str | None:
    """The FTS5 query of :func:`related_learnings` for ``text``: its ``words`` most frequent
    words (the common ones left out), or None if it has none."""
    counts: dict[str, int] = {}
    for word in _WORD.findall(text.lower()):
        if word not in _COMMON:
            counts[word] = counts.get(word, 0) + 1
    top = sorted(counts, key=lambda w: (-counts[w], w))[:words]
    return " OR ".join(f'"{w}"' for w in top) if top else None


def related_learnings(
    m: apsw.Connection, query: str, limit: int
) -> list[tuple[int, str, float, str]]:
    """Current (not superseded) learnings matching ``query`` (of :func:`related_query`), best
    first, as (id, type, created_at, content): plain FTS5 BM25.

    What the curator is shown so it can say a new learning replaces an old one; plain BM25
    on purpose: it reads the database it is given (a rebuild's aside database too).
    """
    rows = schema.rows(
        m,
        "SELECT l.id, l.type, l.created_at, l.content FROM learnings_fts f"
        " JOIN learnings l ON l.id = f.rowid"
        " WHERE learnings_fts MATCH ? AND l.superseded_by IS NULL"
        " ORDER BY bm25(learnings_fts) LIMIT ?",
        (query, limit),
    )
    return [(int(i), str(k), float(ts), str(c)) for i, k, ts, c in rows]


def retracted_at(m: apsw.Connection, learning_id: int) -> float | None:
    """When learning ``learning_id`` was retracted (``wsd forget``), or None if it was not."""
    row = schema.first(
        m, "SELECT max(retracted_at) FROM retractions WHERE learning_id = ?", (learning_id,)
    )
    return None if row is None or row[0] is None else float(row[0])


def retract(m: apsw.Connection, learning_id: int, now: float, reason: str | None = None) -> bool:
    """``wsd forget``: delete a learning (and so its FTS entry and source links), keeping in
    ``retractions`` that it was, when, and its key, so it is never stored again (by curation
    or a rebuild). False if there is no such learning."""
    with schema.write_txn(m):
        row = schema.first(
            m,
            "SELECT type, content_key, batch_id, created_at FROM learnings WHERE id = ?",
            (learning_id,),
        )
        if row is None:
            return False
        m.execute(
            "INSERT INTO retractions (learning_id, type, content_key, batch_id, created_at,"
            " retracted_at, reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (learning_id, *row, now, reason),
        )
        # What pointed at it lets go: a learning it had replaced is current again.
        m.execute(
            "UPDATE learnings SET superseded_by = NULL, superseded_at = NULL"
            " WHERE superseded_by = ?",
            (learning_id,),
        )
        m.execute(
            "UPDATE pending_actions SET source_learning_id = NULL WHERE source_learning_id = ?",
            (learning_id,),
        )
        m.execute("DELETE FROM learnings WHERE id = ?", (learning_id,))
    return True


# -- ids that outlive a rebuild --------------------------------------------------------------

#: Where the rebuilt learnings are moved while their ids are given back.
_ASIDE_IDS = 1 << 40
#: Every column that holds a learning's id, beside ``learnings.id`` itself.
_ID_COLUMNS = (
    ("learnings", "superseded_by"),
    ("learning_sources", "learning_id"),
    ("learning_vectors", "learning_id"),
    ("pending_actions", "source_learning_id"),
)


def keep_ids(m: apsw.Connection) -> None:
    """Give each learning of the rebuilt database (``main``) the id the live one (``live``)
    has for the same statement (its content key): the ``L12`` the agent was shown, and a
    ``[replaces L5]``, keep naming what they named (issue 45). One the live database never
    had gets an id past every id the live one ever gave, so no live id comes to name another
    statement. Inside the caller's transaction (child rows are checked at its commit); the
    full-text index, whose rowids are the ids, is made again from the table."""
    m.execute("PRAGMA defer_foreign_keys = ON")
    rows = schema.rows(
        m,
        "SELECT b.id, (SELECT l.id FROM live.learnings l WHERE l.content_key = b.content_key)"
        " FROM main.learnings b ORDER BY b.id",
    )
    top = max(
        int(schema.one(m, "SELECT coalesce(max(id), 0) FROM live.learnings")[0]),
        int(
            schema.one(
                m,
                "SELECT coalesce(max(seq), 0) FROM live.sqlite_sequence WHERE name = 'learnings'",
            )[0]
        ),
    )
    moves: list[tuple[int, int]] = []
    for built, live in rows:
        target = int(live) if live is not None else None
        if target is None:
            top += 1
            target = top
        if target != int(built):
            moves.append((int(built), target))
    _sequence_at_least(m, "learnings", top)
    if not moves:
        return
    m.execute("CREATE TEMP TABLE learning_moves (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)")
    try:
        m.executemany("INSERT INTO temp.learning_moves VALUES (?, ?)", moves)
        columns = (("learnings", "id"), *_ID_COLUMNS)
        # Two steps, through ids no row has, so that no move lands on a row not moved yet.
        for table, col in columns:
            m.execute(
                f"UPDATE main.{table} SET {col} = {col} + ?"
                f" WHERE {col} IN (SELECT old FROM temp.learning_moves)",
                (_ASIDE_IDS,),
            )
        for table, col in columns:
            m.execute(
                f"UPDATE main.{table} SET {col} = (SELECT new FROM temp.learning_moves"
                f" WHERE old = {col} - ?1) WHERE {col} >= ?1",
                (_ASIDE_IDS,),
            )
    finally:
        m.execute("DROP TABLE temp.learning_moves")
    m.execute("INSERT INTO main.learnings_fts (learnings_fts) VALUES ('rebuild')")


def _sequence_at_least(m: apsw.Connection, table: str, top: int) -> None:
    """The next id ``main.table`` gives is past ``top`` (SQLite keeps it in
    ``sqlite_sequence``, which has a row only once the table gave one)."""
    m.execute("UPDATE main.sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (top, table))
    if m.changes() == 0:
        m.execute("INSERT INTO main.sqlite_sequence (name, seq) VALUES (?, ?)", (table, top))


class Learnings(Facet):
    """``wsd import`` and ``wsd forget``, and the learnings a new session and the curator
    are shown (``store.learnings``)."""

    recent_learnings = reads("memory", recent_learnings)
    learnings = reads("memory", learnings)

    def related_learnings(
        self, text: str, limit: int, words: int = 40
    ) -> list[tuple[int, str, float, str]]:
        """Current learnings most related to ``text``, best first, as (id, type, created_at,
        content): plain FTS5 BM25 over its ``words`` most frequent words."""
        query = related_query(text, words)
        if query is None or limit <= 0:
            return []
        with self._db.memory(readonly=True) as m:
            return related_learnings(m, query, limit)

    retracted_at = reads("memory", retracted_at)

    def content_of(self, learning_id: int) -> str | None:
        """Learning ``learning_id``'s statement, or None if there is no such learning."""
        with self._db.memory(readonly=True) as m:
            row = schema.first(m, "SELECT content FROM learnings WHERE id = ?", (learning_id,))
        return None if row is None else str(row[0])

    retract = uses("memory", retract)
