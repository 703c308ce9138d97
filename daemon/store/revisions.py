"""The md revisions: every version of every curated file, with where it came from.

A batch's revisions are written by :func:`wsd.daemon.store.ledger.commit_batch`, in the
batch's transaction; the verbs here read them and record the ones no batch produced (a
person's edit adopted, a ``wsd memory restore``). Each takes an open memory.db connection
(the :class:`Revisions` facet at the end, ``store.revisions``, opens one per call).
"""

from __future__ import annotations

import apsw

from wsd import schema
from wsd.daemon.store.records import (
    Revision,
    sha256,
)
from wsd.daemon.store.verbs import Facet, uses

_COLUMNS = "id, file, created_at, source, batch_id, sha256, content, erased"


def latest_md(m: apsw.Connection) -> dict[str, str]:
    """The latest revision of each curated file that has one."""
    rows = schema.rows(
        m,
        "SELECT file, content FROM md_revisions WHERE id IN"
        " (SELECT max(id) FROM md_revisions GROUP BY file)",
    )
    return {str(f): str(c) for f, c in rows}


def md_history(m: apsw.Connection, name: str) -> list[Revision]:
    """Every revision of one curated file, oldest first."""
    rows = schema.rows(
        m, f"SELECT {_COLUMNS} FROM md_revisions WHERE file = ? ORDER BY id", (name,)
    )
    return [Revision(*row) for row in rows]


def known_revision(m: apsw.Connection, name: str, digest: str) -> int | None:
    """The newest revision of ``name`` with this sha256, if any."""
    row = schema.first(
        m, "SELECT max(id) FROM md_revisions WHERE file = ? AND sha256 = ?", (name, digest)
    )
    return None if row is None or row[0] is None else int(row[0])


def baseline_revision(m: apsw.Connection, name: str, since: float) -> Revision | None:
    """The version of ``name`` that erosion is measured against (see
    :mod:`wsd.daemon.curation.judging.erosion`): the latest a person made (a hand edit adopted, a
    restore) after ``since``; else the latest at ``since``; else the first after it."""
    row = schema.first(
        m,
        f"SELECT {_COLUMNS} FROM md_revisions"
        " WHERE id = coalesce("
        "  (SELECT max(id) FROM md_revisions WHERE file = ?1 AND created_at > ?2"
        "    AND source IN ('hand', 'restore', 'import')),"
        "  (SELECT max(id) FROM md_revisions WHERE file = ?1 AND created_at <= ?2),"
        "  (SELECT min(id) FROM md_revisions WHERE file = ?1 AND created_at > ?2))",
        (name, since),
    )
    return None if row is None else Revision(*row)


def person_revisions(m: apsw.Connection, after: int = 0) -> list[tuple[Revision, str]]:
    """Every revision no batch of this workspace made (a hand edit adopted, a restore, an
    import, curated elsewhere or not) with an id above
    ``after``, oldest first, each with the content of the revision before it ("" for a
    file's first): what they changed, for ``wsd rebuild`` to replay."""
    rows = schema.rows(
        m,
        "SELECT r.id, r.file, r.created_at, r.source, r.batch_id, r.sha256, r.content,"
        " coalesce((SELECT p.content FROM md_revisions p WHERE p.file = r.file"
        "   AND p.id < r.id ORDER BY p.id DESC LIMIT 1), '')"
        " FROM md_revisions r WHERE r.batch_id IS NULL"
        " AND r.id > ? ORDER BY r.id",
        (after,),
    )
    return [(Revision(*row[:7]), str(row[7])) for row in rows]


def add_revision(
    m: apsw.Connection, name: str, content: str, source: str, now: float, own_txn: bool = True
) -> int:
    """Record a revision no batch produced (a hand edit adopted, a restore, an import); its
    id. ``own_txn=False``: inside the caller's transaction."""
    if own_txn:
        with schema.write_txn(m):
            return add_revision(m, name, content, source, now, own_txn=False)
    m.execute(
        "INSERT INTO md_revisions (file, content, sha256, created_at, batch_id, source)"
        " VALUES (?, ?, ?, ?, NULL, ?)",
        (name, content, sha256(content), now, source),
    )
    return int(m.last_insert_rowid())


class Revisions(Facet):
    """The md revisions of the curated files (``store.revisions``)."""

    latest_md = uses("memory", latest_md)
    md_history = uses("memory", md_history)
    known_revision = uses("memory", known_revision)
    baseline_revision = uses("memory", baseline_revision)
    person_revisions = uses("memory", person_revisions)

    add_revision = uses("memory", add_revision)
