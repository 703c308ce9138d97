"""One memory on many machines (SPEC.md section 11), the SQL of it: a satellite seals its
settled turns and marks those home curated; home ingests each listed satellite's sealed
turns from its followed copy of that satellite's transcript.db, exactly once.

Keys (schema 013_machines.sql, 017_machines.sql): a satellite's turn is named by its
machine and its origin key, a random id given when the turn is sealed. Home's transcript.db
holds each ingested turn once (a unique index); memory.db's ``machine_turns`` holds each
curated one, written in the batch's transaction, so that neither a satellite's database
restored or recreated nor home's transcript.db lost makes a turn curated twice.

A followed copy (``litestream restore -f``) is written by litestream alone: it is opened
read-only here, and one that cannot be read yet (not restored, being replaced) reads as
nothing new.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.store import actions
from wsd.daemon.store.erasure import mark_digest, marked_phrases, marks
from wsd.daemon.store.ledger import put_state
from wsd.daemon.store.records import sha256 as sha256_of
from wsd.daemon.store.verbs import Facet, reads, uses
from wsd.schema.encoded import any_encoded

#: A turn settling: it holds a spooled event newer than ?1 (as the curation's take waits for
#: the rest of a burst, :data:`wsd.daemon.store.turns._SETTLING`).
_SETTLING = (
    "EXISTS (SELECT 1 FROM events e WHERE e.observation_id = o.id AND e.via = 'spool'"
    " AND e.ts >= ?1)"
)
_DIGEST = re.compile(r"[0-9a-f]{64}")
#: The longest key or session id taken from another machine's copy.
KEY_CHARS = 200
#: How a turn may have been closed (transcript 001's CHECK).
CLOSED_BY = ("stop", "next_prompt", "quiet", "session_end")
#: The longest hand edit taken from another machine (a memory file is far smaller).
PROPOSAL_CHARS = 1 << 20
#: Turns read from a followed copy per call (a satellite back after a week: several calls).
INGEST_ROWS = 500


def seal(t: apsw.Connection, settled_before: float, now: float) -> int:
    """Give each settled turn of this (satellite's) transcript its origin key, oldest first,
    stopping at the first still settling (home reads sealed turns in id order and stops at
    an unsealed one); how many were sealed. From now on they never change."""
    with schema.write_txn(t):
        first_settling = schema.first(
            t,
            f"SELECT min(o.id) FROM observations o WHERE o.origin_key IS NULL AND {_SETTLING}",
            (settled_before,),
        )
        upto = first_settling[0] if first_settling and first_settling[0] is not None else 2**62
        t.execute(
            "UPDATE observations SET origin_key = lower(hex(randomblob(16)))"
            " WHERE origin_key IS NULL AND id < ?",
            (upto,),
        )
        return int(t.changes())


def mark_curated(t: apsw.Connection, keys: Sequence[str]) -> int:
    """Mark this satellite's turns of these origin keys curated (home did); how many."""
    if not keys:
        return 0
    with schema.write_txn(t):
        t.execute(
            "UPDATE observations SET processed = 1 WHERE processed = 0"
            " AND origin_key IN (SELECT value FROM json_each(?))",
            (json.dumps(list(keys)),),
        )
        return int(t.changes())


def unsealed(t: apsw.Connection) -> int:
    """How many of this satellite's turns are not sealed yet (not on their way home)."""
    return int(schema.one(t, "SELECT count(*) FROM observations WHERE origin_key IS NULL")[0])


# -- home: memory.db ------------------------------------------------------------------------


def curated_keys(m: apsw.Connection, machine: str, keys: Sequence[str]) -> set[str]:
    """Which of ``machine``'s origin keys a batch already curated."""
    rows = schema.rows(
        m,
        "SELECT origin_key FROM machine_turns WHERE machine = ?"
        " AND origin_key IN (SELECT value FROM json_each(?))",
        (machine, json.dumps(list(keys))),
    )
    return {str(r[0]) for r in rows}


def curated_for(m: apsw.Connection, machine: str, after_batch: int) -> tuple[list[str], int]:
    """``machine``'s origin keys curated by batches after ``after_batch``, and its newest
    batch: what a satellite marks curated. A newest batch below ``after_batch`` (home's
    memory.db rebuilt, its batches numbered again) reads every key again."""
    (top,) = schema.one(
        m, "SELECT coalesce(max(batch_id), 0) FROM machine_turns WHERE machine = ?", (machine,)
    )
    if int(top) < after_batch:
        after_batch = 0
    rows = schema.rows(
        m,
        "SELECT origin_key FROM machine_turns WHERE machine = ? AND batch_id > ?",
        (machine, after_batch),
    )
    return [str(r[0]) for r in rows], int(top)


def curated_counts(m: apsw.Connection) -> dict[str, tuple[int, float | None]]:
    """Per machine: how many of its turns home curated, and when the newest was."""
    rows = schema.rows(
        m, "SELECT machine, count(*), max(curated_at) FROM machine_turns GROUP BY machine"
    )
    return {str(r[0]): (int(r[1]), None if r[2] is None else float(r[2])) for r in rows}


def publish(m: apsw.Connection, values: dict[str, str], now: float) -> None:
    """Home's word to the satellites, in memory.db's state (their copy has it a follow
    interval later): when home last looked in (``home_beacon``) and what it ingested."""
    with schema.write_txn(m):
        for key, value in values.items():
            put_state(m, key, value, now)


def home_state(m: apsw.Connection) -> dict[str, str]:
    """What home published (:func:`publish`)."""
    return {
        str(k): str(v)
        for k, v in schema.rows(m, "SELECT key, value FROM state WHERE key GLOB 'home_*'")
    }


# -- home: transcript.db --------------------------------------------------------------------


@dataclass(frozen=True)
class Cursor:
    """Home's place in one satellite database (its identity): the last observation id
    ingested and its key."""

    identity: str
    last_id: int
    last_key: str


def cursor(t: apsw.Connection, machine: str, identity: str) -> Cursor | None:
    row = schema.first(
        t,
        "SELECT last_id, last_key FROM machine_cursors WHERE machine = ? AND identity = ?",
        (machine, identity),
    )
    return None if row is None else Cursor(identity, int(row[0]), str(row[1]))


def ingest(
    t: apsw.Connection,
    machine: str,
    identity: str,
    rows: Sequence[CopiedTurn],
    skip: Iterable[str],
    now: float,
) -> int:
    """Add ``machine``'s turns (read from its followed copy, in id order) to home's
    transcript as turns to curate, but those whose keys are in ``skip`` (curated already),
    and move the cursor past the last of ``rows``, in one transaction; how many were added
    (a key already here is not added again)."""
    if not rows:
        return 0
    skipped = set(skip)
    added = 0
    with schema.write_txn(t):
        for row in rows:
            if row.key in skipped or row.erased:
                continue
            session = f"{machine}/{row.session_id}"
            t.execute(
                "INSERT INTO sessions (id, started_at, last_event_at) VALUES (?1, ?2, ?2)"
                " ON CONFLICT (id) DO UPDATE SET last_event_at = max(last_event_at, ?2)",
                (session, row.timestamp),
            )
            amends = None
            if row.amends_key is not None:
                found = schema.first(
                    t,
                    "SELECT id FROM observations WHERE origin_machine = ? AND origin_key = ?",
                    (machine, row.amends_key),
                )
                amends = None if found is None else int(found[0])
            t.execute(
                "INSERT OR IGNORE INTO observations (timestamp, session_id, sequence_num,"
                " user_message, tool_calls_json, agent_response, closed_by, amends, encoded,"
                " origin_machine, origin_key)"
                " VALUES (?, ?, (SELECT coalesce(max(sequence_num), 0) + 1 FROM observations"
                "  WHERE session_id = ?), ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row.timestamp,
                    session,
                    session,
                    row.user_message,
                    row.tool_calls_json,
                    row.agent_response,
                    row.closed_by,
                    amends,
                    any_encoded(row.user_message, row.tool_calls_json, row.agent_response),
                    machine,
                    row.key,
                ),
            )
            if t.changes():
                added += 1
                if amends is None:
                    t.execute(
                        "UPDATE sessions SET observation_count = observation_count + 1"
                        " WHERE id = ?",
                        (session,),
                    )
        last = rows[-1]
        t.execute(
            "INSERT INTO machine_cursors (machine, identity, last_id, last_key, updated_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (machine, identity) DO UPDATE SET"
            " last_id = excluded.last_id, last_key = excluded.last_key,"
            " updated_at = excluded.updated_at",
            (machine, identity, last.id, last.key, now),
        )
    return added


def forget_cursor(t: apsw.Connection, machine: str, identity: str) -> None:
    """Read ``machine``'s database ``identity`` again from its start (it was rewound)."""
    with schema.write_txn(t):
        t.execute(
            "DELETE FROM machine_cursors WHERE machine = ? AND identity = ?", (machine, identity)
        )


def ingested(t: apsw.Connection) -> dict[str, tuple[int, int, float | None]]:
    """Per machine: turns ingested, of them not curated yet, when the cursor last moved."""
    rows = schema.rows(
        t,
        "SELECT origin_machine, count(*), total(processed = 0) FROM observations"
        " WHERE origin_machine IS NOT NULL GROUP BY 1",
    )
    moved = dict(
        schema.rows(t, "SELECT machine, max(updated_at) FROM machine_cursors GROUP BY machine")
    )
    out = {str(m): (int(n), int(p), moved.get(m)) for m, n, p in rows}
    for m, at in moved.items():
        out.setdefault(str(m), (0, 0, at))
    return out


# -- a followed copy of a satellite's transcript.db ------------------------------------------


@dataclass(frozen=True)
class CopiedTurn:
    """One sealed turn of a satellite, as its followed copy holds it."""

    id: int
    key: str
    timestamp: float
    session_id: str
    user_message: str | None
    tool_calls_json: str
    agent_response: str | None
    closed_by: str
    amends_key: str | None
    erased: bool


def copy_state(c: apsw.Connection, after: int, limit: int) -> tuple[str, list[CopiedTurn]]:
    """The copy's identity and its sealed turns after id ``after``, in id order, up to the
    first unsealed one (a turn still settling there: later ones wait for it)."""
    identity = schema.identity(c)
    rows = schema.rows(
        c,
        "SELECT o.id, o.origin_key, o.timestamp, o.session_id, o.user_message,"
        " o.tool_calls_json, o.agent_response, o.closed_by,"
        " (SELECT a.origin_key FROM observations a WHERE a.id = o.amends), o.erased_at"
        " FROM observations o WHERE o.id > ? ORDER BY o.id LIMIT ?",
        (after, limit),
    )
    out: list[CopiedTurn] = []
    for r in rows:
        if r[1] is None:
            break
        # The copy is another machine's database: every value is checked, never trusted to
        # be what our schema wrote (a row home cannot store would stop its ingest for good).
        out.append(
            CopiedTurn(
                int(r[0]),
                str(r[1])[:KEY_CHARS],
                r[2] if isinstance(r[2], float | int) and math.isfinite(r[2]) else 0.0,
                str(r[3])[:KEY_CHARS],
                r[4] if isinstance(r[4], str) else None,
                r[5] if isinstance(r[5], str) else "[]",
                r[6] if isinstance(r[6], str) else None,
                str(r[7]) if r[7] in CLOSED_BY else "stop",
                None if r[8] is None else str(r[8])[:KEY_CHARS],
                r[9] is not None,
            )
        )
    return identity, out


def key_at(c: apsw.Connection, obs_id: int) -> str | None:
    """The origin key of the copy's observation ``obs_id`` (None: no such sealed turn)."""
    row = schema.first(c, "SELECT origin_key FROM observations WHERE id = ?", (obs_id,))
    return None if row is None or row[0] is None else str(row[0])


# -- hand edits of the person's files on a satellite ----------------------------------------

#: The memory files that are the person's (one everywhere); tools.md and files.md describe a
#: machine and stay its own (SPEC.md section 11).
PERSON_FILES = ("user.md", "context.md")


def propose(t: apsw.Connection, file: str, base_sha: str | None, content: str, now: float) -> str:
    """Record a hand edit of ``file`` on this satellite, to be carried home; its uid."""
    with schema.write_txn(t):
        (uid,) = schema.one(t, "SELECT lower(hex(randomblob(16)))")
        t.execute(
            "INSERT INTO md_proposals (uid, file, base_sha, content, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (uid, file, base_sha, content, now),
        )
        return str(uid)


def open_proposals(t: apsw.Connection) -> dict[str, tuple[str, str]]:
    """This satellite's hand edits home has not answered yet: file -> (uid, content), the
    newest of each file."""
    rows = schema.rows(
        t,
        "SELECT file, uid, content FROM md_proposals WHERE settled_at IS NULL ORDER BY rowid",
    )
    return {str(f): (str(u), str(c)) for f, u, c in rows}


def settle_proposals(t: apsw.Connection, uids: Sequence[str], now: float) -> None:
    """Home answered these hand edits (adopted, or kept as a conflict for the person)."""
    with schema.write_txn(t):
        t.execute(
            "UPDATE md_proposals SET settled_at = ? WHERE settled_at IS NULL"
            " AND uid IN (SELECT value FROM json_each(?))",
            (now, json.dumps(list(uids))),
        )


@dataclass(frozen=True)
class HomeFiles:
    """The person's files as a satellite's copy of home's memory has them: each one's latest
    text, the sha256 of every version it had (one the satellite wrote before is no edit),
    and how home answered this satellite's hand edits (uid -> ``conflict`` while the person
    has not decided, else ``decided``)."""

    latest: dict[str, str]
    known: dict[str, set[str]]
    answered: dict[str, str]


def home_files(m: apsw.Connection, machine: str) -> HomeFiles:
    """:class:`HomeFiles` of memory.db ``m`` (a satellite's copy of home's) for ``machine``."""
    latest: dict[str, str] = {}
    known: dict[str, set[str]] = {name: set() for name in PERSON_FILES}
    for file, content, sha in schema.rows(
        m,
        "SELECT file, content, sha256 FROM md_revisions WHERE file IN ('user.md', 'context.md')"
        " ORDER BY id",
    ):
        latest[str(file)] = str(content)
        known[str(file)].add(str(sha))
    # A conflict stays open while its pending action does: the person has not decided, and
    # the satellite keeps their edit on its disk meanwhile.
    answered = dict(
        schema.rows(
            m,
            "SELECT p.uid, CASE WHEN p.status = 'conflict' AND EXISTS (SELECT 1 FROM"
            " pending_actions a WHERE a.dedup_key = 'md_proposal:' || p.machine || ':' || p.uid"
            " AND a.status = 'pending') THEN 'conflict' ELSE 'decided' END"
            " FROM md_proposals p WHERE p.machine = ?",
            (machine,),
        )
    )
    return HomeFiles(latest, known, {str(k): str(v) for k, v in answered.items()})


def take_proposal(
    m: apsw.Connection, machine: str, proposal: Proposal, now: float, action: str
) -> str | None:
    """Home takes in a satellite's hand edit, once (None: taken before): adopted as a new
    revision (source ``hand``) when its base is home's latest version of the file (or both
    have none), else kept as a conflict with the pending action ``action``; the status."""
    with schema.write_txn(m):
        if schema.first(
            m, "SELECT 1 FROM md_proposals WHERE machine = ? AND uid = ?", (machine, proposal.uid)
        ):
            return None
        row = schema.first(
            m,
            "SELECT id, sha256 FROM md_revisions WHERE file = ? ORDER BY id DESC LIMIT 1",
            (proposal.file,),
        )
        current = None if row is None else str(row[1])
        revision = None
        if current == proposal.base_sha:
            m.execute(
                "INSERT INTO md_revisions (file, content, sha256, created_at, source)"
                " VALUES (?, ?, ?, ?, 'hand')",
                (proposal.file, proposal.content, sha256_of(proposal.content), now),
            )
            revision, status = int(m.last_insert_rowid()), "adopted"
        else:
            status = "conflict"
        m.execute(
            "INSERT INTO md_proposals (machine, uid, file, base_sha, content, status,"
            " revision_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                machine,
                proposal.uid,
                proposal.file,
                proposal.base_sha,
                proposal.content,
                status,
                revision,
                now,
            ),
        )
        if status == "conflict":
            (pid,) = schema.one(m, "SELECT last_insert_rowid()")
            actions.add(
                m,
                action.format(id=pid),
                1,
                "machines",
                f"md_proposal:{machine}:{proposal.uid}",
                now,
            )
        return status


@dataclass(frozen=True)
class Proposal:
    """A satellite's hand edit, as home reads it from its copy of that satellite."""

    uid: str
    file: str
    base_sha: str | None
    content: str


def proposals_in(t: apsw.Connection) -> list[Proposal]:
    """Every hand edit a satellite's transcript (home's copy of it) carries."""
    return [
        Proposal(str(u)[:KEY_CHARS], f, b if isinstance(b, str) else None, c)
        for u, f, b, c in schema.rows(
            t, "SELECT uid, file, base_sha, content FROM md_proposals ORDER BY rowid"
        )
        # Another machine's rows: only the person's files, only text of a file's size.
        if f in PERSON_FILES and isinstance(c, str) and len(c) <= PROPOSAL_CHARS
    ]


def conflicts(m: apsw.Connection) -> list[tuple[int, str, str, str, float]]:
    """Hand edits kept as conflicts: (id, machine, file, content, when)."""
    return [
        (int(i), str(mc), str(f), str(c), float(at))
        for i, mc, f, c, at in schema.rows(
            m,
            "SELECT id, machine, file, content, created_at FROM md_proposals"
            " WHERE status = 'conflict' ORDER BY id",
        )
    ]


def adopt_conflict(m: apsw.Connection, proposal_id: int, now: float) -> tuple[str, str] | None:
    """Make conflict ``proposal_id`` (a satellite's hand edit) the current version of its
    file, as a new revision (source ``hand``), its pending action completed; (file, content),
    or None when there is no such open conflict."""
    with schema.write_txn(m):
        row = schema.first(
            m,
            "SELECT machine, uid, file, content FROM md_proposals WHERE id = ?"
            " AND status = 'conflict'",
            (proposal_id,),
        )
        if row is None:
            return None
        machine, uid, file, content = (str(x) for x in row)
        m.execute(
            "INSERT INTO md_revisions (file, content, sha256, created_at, source)"
            " VALUES (?, ?, ?, ?, 'hand')",
            (file, content, sha256_of(content), now),
        )
        m.execute(
            "UPDATE md_proposals SET status = 'resolved', revision_id = last_insert_rowid()"
            " WHERE id = ?",
            (proposal_id,),
        )
        m.execute(
            "UPDATE pending_actions SET status = 'completed', updated_at = ?"
            " WHERE dedup_key = ? AND status = 'pending'",
            (now, f"md_proposal:{machine}:{uid}"),
        )
        return file, content


# -- forgetting across machines: marks, never words ---------------------------------------


def mark_out(t: apsw.Connection, marks: Sequence[tuple[str, int]], now: float) -> None:
    """A forget asked here, for home: each phrase's mark (digest, number of words)."""
    with schema.write_txn(t):
        t.executemany(
            "INSERT OR IGNORE INTO forget_marks_out (digest, words, created_at) VALUES (?, ?, ?)",
            [(d, n, now) for d, n in marks],
        )


def marks_out(t: apsw.Connection) -> list[tuple[str, int]]:
    """The forgets a satellite carries home (its transcript; on home, the copy of it)."""
    return [
        (d, n)
        for d, n in schema.rows(t, "SELECT digest, words FROM forget_marks_out")
        # Another machine's rows: a mark is a SHA-256 in hex over a phrase of some words.
        if isinstance(d, str) and _DIGEST.fullmatch(d) and isinstance(n, int) and 0 < n <= 64
    ]


def take_marks(
    m: apsw.Connection, machine: str, marks: Sequence[tuple[str, int]], now: float
) -> list[tuple[str, int]]:
    """Home takes in a satellite's forgets, once each: their marks become home's (so every
    machine applies them, and nothing holding them is curated again); the new ones."""
    new = []
    with schema.write_txn(m):
        for digest, n in marks:
            m.execute(
                "INSERT OR IGNORE INTO machine_forgets (machine, digest, taken_at)"
                " VALUES (?, ?, ?)",
                (machine, digest, now),
            )
            if m.changes():
                new.append((digest, n))
                m.execute(
                    "INSERT OR IGNORE INTO forget_marks (digest, words) VALUES (?, ?)", (digest, n)
                )
    return new


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def transcript_marked(t: apsw.Connection, key: bytes, by_len: dict[int, set[str]]) -> list[str]:
    """Every phrase of this transcript (turns, events) that a mark recognises, as written."""
    found: set[str] = set()
    for row in schema.rows(
        t, "SELECT user_message, agent_response, tool_calls_json FROM observations"
    ):
        for text in row[:2]:
            found.update(marked_phrases(key, by_len, str(text or "")))
        try:
            found.update(
                p
                for s in _strings(json.loads(row[2] or "[]"))
                for p in marked_phrases(key, by_len, s)
            )
        except ValueError:
            found.update(marked_phrases(key, by_len, str(row[2])))
    for (payload,) in schema.rows(t, "SELECT payload FROM events"):
        try:
            strings = list(_strings(json.loads(payload)))
        except ValueError:
            strings = [str(payload)]
        for text in strings:
            found.update(marked_phrases(key, by_len, text))
    return sorted(found)


def memory_marked(m: apsw.Connection, key: bytes, by_len: dict[int, set[str]]) -> list[str]:
    """Every phrase of this memory (learnings, actions, md revisions, the turn index) that a
    mark recognises, as written."""
    found: set[str] = set()
    for sql in (
        "SELECT content FROM learnings",
        "SELECT content FROM pending_actions",
        "SELECT content FROM md_revisions",
        "SELECT coalesce(prompt, '') || ' ' || coalesce(response, '') || ' ' || coalesce(tools, '')"
        " FROM turns",
    ):
        for (text,) in schema.rows(m, sql):
            found.update(marked_phrases(key, by_len, str(text or "")))
    return sorted(found)


def only(marks: Sequence[tuple[str, int]]) -> dict[int, set[str]]:
    """Marks (digest, words) as :func:`wsd.daemon.store.erasure.marks` groups them."""
    by_len: dict[int, set[str]] = {}
    for digest, n in marks:
        by_len.setdefault(n, set()).add(digest)
    return by_len


class Machines(Facet):
    """Many machines (``store.machines``): sealing and marking on a satellite, the ingest
    and its cursors on home, and the followed copies read (see the module)."""

    seal = uses("transcript", seal)
    mark_curated = uses("transcript", mark_curated)
    unsealed = reads("transcript", unsealed)
    curated_keys = reads("memory", curated_keys)
    curated_counts = reads("memory", curated_counts)
    cursor = reads("transcript", cursor)
    ingest = uses("transcript", ingest)
    forget_cursor = uses("transcript", forget_cursor)
    ingested = reads("transcript", ingested)
    publish = uses("memory", publish)
    home_word = reads("memory", home_state)
    propose = uses("transcript", propose)
    open_proposals = reads("transcript", open_proposals)
    settle_proposals = uses("transcript", settle_proposals)
    take_proposal = uses("memory", take_proposal)
    conflicts = reads("memory", conflicts)
    adopt_conflict = uses("memory", adopt_conflict)
    mark_out = uses("transcript", mark_out)
    marks_out = reads("transcript", marks_out)
    take_marks = uses("memory", take_marks)
    transcript_marked = reads("transcript", transcript_marked)
    memory_marked = reads("memory", memory_marked)

    def _copy(self, path: str, kind: schema.Kind) -> apsw.Connection:
        return self._db.opener(path, kind, readonly=True)

    @staticmethod
    def marked_in(texts: Iterable[str], key: bytes, by_len: dict[int, set[str]]) -> list[str]:
        """The phrases of ``texts`` (as written) that the marks recognise."""
        return sorted({p for text in texts for p in marked_phrases(key, by_len, text)})

    def carry_home(self, copy: str, stem_lists: Sequence[Sequence[str]], now: float) -> bool:
        """A forget asked on this satellite, recorded for home as marks made with home's key
        (read from the copy of home's memory at ``copy``); False when there is no copy to
        read the key from yet (nothing recorded)."""
        try:
            key, _ = self.marks_in_copy(copy)
        except apsw.Error:
            return False
        if not key:
            return False
        self.mark_out([(mark_digest(key, words), len(words)) for words in stem_lists], now)
        return True

    def marks_in_copy(self, path: str) -> tuple[bytes, dict[int, set[str]]]:
        """Home's forget key and marks, from a satellite's copy of home's memory.db."""
        conn = self._copy(path, "memory")
        try:
            return marks(conn)
        finally:
            conn.close()

    def marks_out_in_copy(self, path: str) -> list[tuple[str, int]]:
        """:func:`marks_out` of home's copy of a satellite's transcript."""
        conn = self._copy(path, "transcript")
        try:
            return marks_out(conn)
        finally:
            conn.close()

    def home_files(self, path: str, machine: str) -> HomeFiles:
        """:func:`home_files` of the copy of home's memory.db at ``path`` (apsw.Error when it
        cannot be read)."""
        conn = self._db.opener(path, "memory", readonly=True)
        try:
            conn.execute("BEGIN")
            try:
                return home_files(conn, machine)
            finally:
                conn.execute("COMMIT")
        finally:
            conn.close()

    def proposals_in_copy(self, path: str) -> list[Proposal]:
        """:func:`proposals_in` of home's copy of a satellite's transcript at ``path``."""
        conn = self._db.opener(path, "transcript", readonly=True)
        try:
            return proposals_in(conn)
        finally:
            conn.close()

    def read_copy(
        self, path: str, after_for: Callable[[str], int], limit: int = INGEST_ROWS
    ) -> tuple[str, int, str | None, list[CopiedTurn]]:
        """From the followed copy of a satellite's transcript.db at ``path``, in one
        snapshot: its identity, the id to read after (``after_for`` that identity), the key
        the copy has at that id (None: none, or 0) and the sealed turns after it
        (:func:`copy_state`). Raises apsw.Error when the copy cannot be read."""
        conn = self._db.opener(path, "transcript", readonly=True)
        try:
            conn.execute("BEGIN")  # one snapshot: litestream may apply pages meanwhile
            try:
                identity = schema.identity(conn)
                after = after_for(identity)
                at = key_at(conn, after) if after else None
                _, rows = copy_state(conn, after, limit)
            finally:
                conn.execute("COMMIT")
            return identity, after, at, rows
        finally:
            conn.close()

    def curated_in_copy(
        self, path: str, machine: str, after_batch: int
    ) -> tuple[list[str], int, dict[str, str]]:
        """:func:`curated_for` and :func:`home_state` read from the followed copy of home's
        memory.db at ``path``; raises apsw.Error when it cannot be read."""
        conn = self._db.opener(path, "memory", readonly=True)
        try:
            conn.execute("BEGIN")
            try:
                keys, newest = curated_for(conn, machine, after_batch)
                return keys, newest, home_state(conn)
            finally:
                conn.execute("COMMIT")
        finally:
            conn.close()
