"""``wsd forget WORDS``: what would go (a dry run), and the erasure itself (issue 33).

An erasure reaches every copy the workspace holds: both databases (see
:mod:`wsd.daemon.store.erasure` for each kind and how no byte is left), the curated md files
on disk, the spool, and every backup ``wsd backup`` recorded. It runs with the daemon paused
(the rebuild's pause file: one at a time, and never during a rebuild), so nothing the daemon
does meanwhile (a batch committing, a person's edit adopted from a file not yet cut, the
watcher) can write the words back.

Order, so a kill -9 anywhere loses nothing and brings nothing back: the words go to the
journal first (memory.db ``forget_journal``); then hand edits are adopted (the pause stops
the daemon from doing it), the spool is recorded into transcript.db, the md files on disk
are cut, then both databases, then the md files are rewritten from the cut revisions, then
the backups; last the journal row goes and the marks (keyed hashes) and the counts stay.
Every step is idempotent: :func:`resume` (run by the next ``wsd forget`` and the daemon)
runs a journal that is still there from the start.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import apsw

from wsd.daemon.memory.forget.words import (
    MARK,
    RETENTION_MARK,
    BadWords,
    Everything,
    Forget,
)
from wsd.daemon.memory.md import files as md_files
from wsd.daemon.memory.md import files_md
from wsd.daemon.replica import owed
from wsd.daemon.runtime.fsio import atomic_write, read_regular, read_text
from wsd.daemon.store import TRANSCRIPT_KINDS, Found, Items, Scope, Store, path_words
from wsd.schema import spool
from wsd.schema.layout import CURATED_FILES, Layout

#: A match of this share of the learnings or more needs ``--all-matches``.
BROAD_SHARE = 0.5
#: ... once there are at least this many learnings (a new memory of 3 is not "most").
BROAD_MIN = 10
#: The kinds a report shows, in order, with the words it uses.
KIND_NAMES = {
    "learnings": "learnings",
    "turns": "turns (the sentence holding the words is cut)",
    "turns_indexed": "turns in the search index",
    "md_lines": "md file lines",
    "revisions": "md revisions holding them",
    "actions": "pending actions",
    "events": "raw hook events",
    "memory_other": "other rows (batch records, card titles)",
    "message_batches": "Message Batch records",
    "at_bridge": "Message Batches whose results the Bridge holds (deleted there once applied)",
    "message_batch_requests": "Message Batch requests",
    "charges": "charge notes",
    "flush_requests": "flush requests",
    "released_turns": "prompt-only turn notes",
    "sessions": "session folders",
    "spool": "spooled events",
    "backups": "backups holding them",
    "backups_unreachable": "backups that could not be reached (still holding the words)",
    "exports": "exports (wsd export) holding them",
    "canvas_mirrors": "canvas mirrors the daemon wrote (cut, or moved to a name without them)",
    "exports_unreachable": "exports that could not be reached or rewritten (still holding them)",
    "workspace_files": "workspace files named with them (left on disk: they are the person's)",
}


class ForgetRefused(ValueError):
    """A forget that will not run as asked; the message says why and what to do."""


@dataclass
class Report:
    """What a forget would erase (dry run) or erased: counts and a few samples per kind."""

    words: list[str]
    erased: bool = False
    kinds: dict[str, Items] = field(default_factory=dict)
    needs_all_matches: bool = False
    learnings_total: int = 0
    #: Learnings the words match, as the broad check before an erasure counted them.
    learnings_hit: int = 0
    #: When the erasure finished (its journal closed); None for a dry run.
    finished_at: float | None = None
    #: After an erasure: every copy was read back (:func:`_read_back`) ...
    verified: bool = False
    #: ... and these kinds still hold the words (how many of each): never reported erased.
    still: dict[str, int] = field(default_factory=dict)
    #: On a satellite: whether the forget was carried home (None: not a satellite).
    carried_home: bool | None = None

    def merge(self, found: Found) -> None:
        for name, kind in found.kinds.items():
            mine = self.kinds.setdefault(name, Items())
            mine.ids.extend(kind.ids)
            for sample in kind.samples:
                if len(mine.samples) < 3:
                    mine.samples.append(sample)

    def add(self, name: str, item: Any, text: str) -> None:
        self.kinds.setdefault(name, Items()).add(item, text)

    def counts(self) -> dict[str, int]:
        return {name: len(k.ids) for name, k in self.kinds.items() if k.ids}

    def total(self) -> int:
        """Items that go (learnings, turns, lines, actions): what a person counts."""
        c = self.counts()
        return sum(c.get(k, 0) for k in ("learnings", "turns", "md_lines", "actions"))

    def as_json(self) -> dict[str, Any]:
        return {
            "erased": self.erased,
            "counts": self.counts(),
            # Only a dry run shows what it found: after the erasure, nothing repeats the words.
            "samples": {}
            if self.erased
            else {n: k.samples for n, k in self.kinds.items() if k.samples},
            "needs_all_matches": self.needs_all_matches,
            "read_back": self.verified,
            "still_holding": self.still,
            **({"carried_home": self.carried_home} if self.carried_home is not None else {}),
        }


def plan(
    store: Store,
    match: Forget | Everything,
    scope: Scope | None = None,
    only: Mapping[str, Sequence[Any]] | None = None,
) -> Report:
    """The dry run: everything the workspace holds of the words (or of the turns in
    ``scope``); nothing changes. ``only``: transcript.db read at these rows alone (the
    read-back of an erasure's)."""
    layout = store.layout
    report = Report([p.text for p in match.phrases])
    mem, tra = store.erasure.find(match, scope, only)
    report.merge(mem)
    report.merge(tra)
    if scope is not None:  # whole turns: what they alone put in the md files is counted above
        report.learnings_total = store.erasure.learnings_count()
        return report
    for name, text in md_files.read_curated(layout).items():
        if text and match.lines_holding(_own_part(name, text)):
            for i in match.lines_holding(_own_part(name, text)):
                line = _own_part(name, text).splitlines()[i]
                key = (name, line.strip())
                if key not in report.kinds.get("md_lines", Items()).ids:
                    report.add("md_lines", key, f"{name}: {line}")
    for path in _spool_files(layout):
        with contextlib.suppress(OSError):
            for n, line in enumerate((read_text(path) or "").splitlines()):
                if match.maybe_in(line) and match.holds(line):
                    report.add("spool", (path, n), "a spooled event")
    for path, _taken in store.erasure.backups():
        if not _reachable(path):
            report.add("backups_unreachable", path, path)
            continue
        found = _backup_store(path).erasure.find(match)
        if any(found[0].counts().values()) or any(found[1].counts().values()):
            report.add("backups", path, path)
    for path, fmt, _at in store.erasure.exports() if scope is None else ():
        if _export_holds(path, fmt, match):
            report.add("exports", path, path)
    for mirror in _mirrors(store, match) if isinstance(match, Forget) else []:
        report.add("canvas_mirrors", mirror.rel, mirror.rel)
    for path in _named(store, match):
        report.add("workspace_files", path, path)
    report.learnings_total = store.erasure.learnings_count()
    hit = len(report.kinds.get("learnings", Items()).ids)
    report.needs_all_matches = (
        report.learnings_total >= BROAD_MIN and hit >= BROAD_SHARE * report.learnings_total
    )
    return report


def _broad(store: Store, match: Forget | Everything, scope: Scope | None) -> Report:
    """What a forget checks before it erases: whether its words match half the learnings
    or more (the learnings index answers it; the full dry run would read every turn)."""
    report = Report([p.text for p in match.phrases])
    if scope is not None or not isinstance(match, Forget):
        return report
    report.learnings_total = store.erasure.learnings_count()
    hit = store.erasure.learnings_matching(match)
    report.needs_all_matches = (
        report.learnings_total >= BROAD_MIN and hit >= BROAD_SHARE * report.learnings_total
    )
    report.learnings_hit = hit
    return report


def forget(
    store: Store,
    words: Sequence[str] = (),
    *,
    scope: Scope | None = None,
    by: str = "cli",
    all_matches: bool = False,
    pause: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
    say: Callable[[str], None] = lambda _s: None,
    now: Callable[[], float] = time.time,
) -> Report:
    """Erase ``words`` everywhere (see the module); the report of what went.

    Raises :class:`BadWords` or :class:`ForgetRefused` (a broad match without
    ``all_matches``) before anything is written. ``pause`` holds the daemon off for the
    erasure (the CLI's; the daemon itself runs without one: it is the one paused)."""
    match: Forget | Everything = (
        Everything(RETENTION_MARK if by == "retention" else MARK)
        if scope is not None
        else Forget.of(words)
    )
    report = _broad(store, match, scope)
    if report.needs_all_matches and not all_matches:
        raise ForgetRefused(
            f"{' / '.join(report.words)} matches {report.learnings_hit} of"
            f" {report.learnings_total} learnings, most of the memory: if that is meant, run"
            " again with --yes --all-matches"
        )
    with pause() if pause is not None else contextlib.nullcontext():
        resume(store, say)
        journal: Any = report.words if scope is None else _scope_json(scope)
        fid = store.erasure.journal_open(journal, by, now())
        done = _run(store, match, fid, now, say, scope)
        if isinstance(match, Forget) and match.phrases:
            say("reading every copy back ...")
            _read_back(store, match, done)
            store.erasure.record_read_back(fid, done.still)
    done.erased = True
    return done


def _read_back(store: Store, match: Forget, done: Report) -> None:
    """Every copy the erasure names read again (the dry run's scan, after it): what still
    holds the words is said (``still``), never reported as erased (issue 44: a forget said
    what it meant to do, not what it saw). Workspace files named with the words stay on disk
    (the person's) and are named; a backup still holding them moves to the unreached.

    transcript.db is read back at the rows the erasure wrote: the others did not hold the
    words when it looked (the daemon paused, nothing else rewrites a turn) and it did not
    write them. Reading them all again, the same look, doubled a forget's time (``make bench``
    forget: 9.7 s at 100,000 turns) to find what it had found."""
    wrote = {k: done.kinds[k].ids for k in TRANSCRIPT_KINDS if k in done.kinds}
    check = plan(store, match, only=wrote)
    done.verified = True
    for name, items in check.kinds.items():
        if not items.ids:
            continue
        if name == "workspace_files":
            done.kinds[name] = items
        elif name in ("backups", "exports"):
            erased = done.kinds.get(name, Items())
            erased.ids = [p for p in erased.ids if p not in set(items.ids)]
            for path in items.ids:
                if path not in done.kinds.get(f"{name}_unreachable", Items()).ids:
                    done.add(f"{name}_unreachable", path, path)
        elif name not in ("backups_unreachable", "exports_unreachable"):
            done.still[name] = len(items.ids)


def resume(store: Store, say: Callable[[str], None] = lambda _s: None) -> int:
    """Finish every erasure a kill left half done (the caller holds the daemon off); how
    many."""
    pending = store.erasure.journal_pending()
    for fid, _by, what in pending:
        say("finishing an erasure that was interrupted ...")
        scope = None
        match: Forget | Everything
        if isinstance(what, dict):
            derived = bool(what.get("derived", True))
            turns = frozenset(int(o) for o in what["turns"])
            scope = Scope(str(what.get("identity")), turns, derived=derived)
            match = Everything(MARK if derived else RETENTION_MARK)
        else:
            try:
                match = Forget.of([str(w) for w in what])
            except BadWords:
                match = Forget(())
        _run(store, match, fid, time.time, say, scope)
    return len(pending)


def _scope_json(scope: Scope) -> dict[str, Any]:
    return {
        "identity": scope.identity,
        "turns": sorted(scope.observations),
        "derived": scope.derived,
    }


def retention_due(store: Store, days: float, now: float) -> bool:
    """Whether :func:`retain` has anything to erase now (read only): an erasure stops
    litestream for its length (replica/hold.py), which nothing to erase must not cost."""
    return bool(store.erasure.retention_scope(now - days * 86400).observations)


def retain(store: Store, days: float, now: float) -> Report | None:
    """The transcript retention (``WSD_TRANSCRIPT_RETENTION_DAYS``): curated turns older
    than ``days`` erased by the same machinery as a forget, what they taught kept (its
    source reads as erased); None when nothing is that old."""
    scope = store.erasure.retention_scope(now - days * 86400)
    if not scope.observations:
        return None
    return forget(store, scope=scope, by="retention", now=lambda: now)


def _run(
    store: Store,
    match: Forget | Everything,
    fid: int,
    now: Callable[[], float],
    say: Callable[[str], None],
    scope: Scope | None = None,
) -> Report:
    layout = store.layout
    report = Report([p.text for p in match.phrases])
    if scope is not None:
        md_files.adopt_hand_edits(layout, store, now())
        _record_spool(store)
        mem, tra = store.erasure.erase(match, say, scope)
        report.merge(mem)
        report.merge(tra)
        md_files.materialise(layout, store.revisions.latest_md())
        _erase_backups(store, match, report, scope)
        _close(store, fid, [], report, now())
        return report
    if not isinstance(match, Forget) or not match.phrases:
        store.erasure.journal_close(fid, [], {}, now())
        return report
    # A person's edit not yet adopted: adopted now (the paused daemon cannot), so the
    # rewrite from revisions below cannot lose it.
    md_files.adopt_hand_edits(layout, store, now())
    _record_spool(store)
    _cut_rejected_spool(layout, match, report)
    _cut_md_on_disk(layout, match, report)
    mem, tra = store.erasure.erase(match, say)
    report.merge(mem)
    report.merge(tra)
    _unlist_names(store, match, report)
    _cut_canvas_mirrors(store, match, report, now())
    md_files.materialise(layout, store.revisions.latest_md())
    say("md files: rewritten")
    _erase_backups(store, match, report, None)
    _erase_exports(store, match, report)
    _close(store, fid, match.stem_lists(), report, now())
    return report


def _close(store: Store, fid: int, stems: list[list[str]], report: Report, at: float) -> None:
    """The journal closed, and the replica owed the erased state from ``at`` on (written
    while litestream is still held off: :mod:`wsd.daemon.replica.owed`)."""
    store.erasure.journal_close(fid, stems, report.counts(), at)
    owed.erased(store.layout, at)
    report.finished_at = at


def _erase_backups(
    store: Store, match: Forget | Everything, report: Report, scope: Scope | None
) -> None:
    for path, _taken in store.erasure.backups():
        if not _reachable(path):
            report.add("backups_unreachable", path, path)
            continue
        try:
            _erase_backup(path, match, scope)
        except (OSError, apsw.Error):
            report.add("backups_unreachable", path, path)
            continue
        report.add("backups", path, path)


#: An export larger than this is not rewritten in memory: named as still holding them.
EXPORT_LIMIT = 256 << 20


def _export_files(path: str, fmt: str) -> list[str]:
    """The files of a recorded export: the jsonl file, or the markdown folder's regular files
    (links and anything else not followed)."""
    if fmt != "markdown":
        return [path]
    out = []
    for base, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(base, d))]
        out += [os.path.join(base, f) for f in files]
    return sorted(out)


def _cut_export_line(match: Forget, line: str) -> str | None:
    """One line of a jsonl export without the words: a learning or an action holding them
    goes (None), an md file or revision loses the lines holding them, anything else is cut
    string by string."""
    if not match.holds(line):
        return line
    try:
        record = json.loads(line)
    except ValueError:
        return match.cut(line)
    if not isinstance(record, dict):
        return match.cut_json_text(line)
    kind, content = record.get("kind"), record.get("content")
    if kind in ("learning", "action"):
        return None
    if kind in ("md", "revision") and isinstance(content, str):
        record["content"] = match.without_lines(content)
        return match.cut_json_text(json.dumps(record, ensure_ascii=False))
    return match.cut_json_text(line)


def _export_holds(path: str, fmt: str, match: Forget | Everything) -> bool:
    """Whether a recorded export holds the words (one that cannot be read: it may)."""
    for name in _export_files(path, fmt) if os.path.lexists(path) else []:
        try:
            text = read_regular(name, EXPORT_LIMIT).decode("utf-8", "replace")
        except FileNotFoundError:
            continue
        except OSError:
            return True
        if match.maybe_in(text) and match.holds(text):
            return True
    return False


def _erase_exports(store: Store, match: Forget, report: Report) -> None:
    """Every recorded export (``wsd export``) without the words, read back; one that cannot
    be reached, read or rewritten is named as still holding them."""
    for path, fmt, _at in store.erasure.exports():
        if not os.path.lexists(path):
            continue  # deleted by the person: nothing of it is left to hold the words
        changed, unreached = False, False
        for name in _export_files(path, fmt):
            try:
                text = read_regular(name, EXPORT_LIMIT).decode("utf-8", "replace")
            except FileNotFoundError:
                continue
            except OSError:
                unreached = True
                continue
            if not match.maybe_in(text):
                continue
            if name.endswith(".jsonl") or fmt == "jsonl":
                lines = [_cut_export_line(match, ln) for ln in text.splitlines()]
                new = "".join(ln + "\n" for ln in lines if ln is not None)
            else:
                new = match.without_lines(text)
            if new == text:
                continue
            try:
                atomic_write(name, new)
                after = read_regular(name, EXPORT_LIMIT).decode("utf-8", "replace")
            except OSError:
                unreached = True
                continue
            if match.holds(after):
                unreached = True
            changed = True
        if unreached:
            report.add("exports_unreachable", path, path)
        elif changed:
            report.add("exports", path, path)


def _named(store: Store, match: Forget | Everything) -> list[str]:
    """The indexed workspace paths whose names hold the words."""
    return [p for p in store.erasure.workspace_paths(match.maybe_in) if match.holds(path_words(p))]


def _unlist_names(store: Store, match: Forget, report: Report) -> None:
    """Workspace files whose names hold the words stay on disk (the person's) and leave
    everything the daemon keeps or shows of them: the file index here, files.md's inventory
    (cut in :func:`_cut_md_on_disk`; the watcher lists no name a forget's marks hold). They
    are named in the report (``workspace_files``)."""
    named = _named(store, match)
    for path in named:
        report.add("workspace_files", path, path)
    store.erasure.unlist_paths(named)


#: A canvas mirror larger than this is not the daemon's (canvas.CARD_MAX_BYTES's order).
MIRROR_LIMIT = 4 << 20


@dataclass
class _Mirror:
    """A canvas card's mirror file as a forget sees it."""

    rel: str
    card: Any
    data: bytes | None
    #: Still as the daemon wrote it (its sha the card's last sync): the daemon's to cut.
    ours: bool
    lines: list[int]
    named: bool


def _mirrors(store: Store, match: Forget) -> list[_Mirror]:
    """Every canvas mirror the words reach: its text (while the daemon's own) or its path.
    Never read through a link, a FIFO or a huge file (root-confined fsio reads)."""
    root = os.path.realpath(store.layout.root)
    out = []
    for rel, card_id in sorted(store.workspace.card_paths().items()):
        card = store.workspace.card(card_id)
        if card is None:
            continue
        try:
            data: bytes | None = read_regular(os.path.join(root, rel), MIRROR_LIMIT, root)
        except FileNotFoundError:
            data = None
        except OSError:
            continue  # a link, a FIFO, a huge file: not the daemon's mirror
        ours = data is not None and hashlib.sha256(data).hexdigest() == card.last_synced_sha256
        text = data.decode("utf-8", "replace") if ours and data is not None else ""
        lines = match.lines_holding(text) if text and match.maybe_in(text) else []
        named = match.holds(path_words(rel))
        if lines or named:
            out.append(_Mirror(rel, card, data, ours, lines, named))
    return out


def _cut_canvas_mirrors(store: Store, match: Forget, report: Report, now: float) -> None:
    """The canvas mirrors the daemon wrote (workspace/canvas.py) without the words: a mirror
    still as the daemon wrote it loses the lines holding them, and one whose path holds them
    moves to a name of its card id (the map follows). A mirror the person edited since is
    theirs: left as it is, only the map's record of its path changes."""
    root = os.path.realpath(store.layout.root)
    for m in _mirrors(store, match):
        full = os.path.join(root, m.rel)
        synced = m.card.last_synced_sha256
        if m.lines and m.data is not None:
            new = match.without_lines(m.data.decode("utf-8", "replace"))
            atomic_write(full, new, mode=0o644, root=root)
            synced = hashlib.sha256(new.encode("utf-8")).hexdigest()
        path = m.rel
        if m.named:
            digest = hashlib.sha256(m.card.card_id.encode()).hexdigest()[:12]
            path = os.path.join(os.path.dirname(m.rel), f"card-{digest}.md")
            if m.ours and not os.path.lexists(os.path.join(root, path)):
                os.rename(full, os.path.join(root, path))
        report.add("canvas_mirrors", m.rel, m.rel)
        store.workspace.save_card(replace(m.card, path=path, last_synced_sha256=synced), now)


def _as_listed(lines: list[str], _budget: int) -> list[str]:
    return lines


def _own_part(name: str, text: str) -> str:
    """The part of a curated file the memory owns (files.md: its notes, not the inventory)."""
    return files_md.notes_of(text) if name == "files.md" else text


def _cut_md_on_disk(layout: Layout, match: Forget, report: Report) -> None:
    for name in CURATED_FILES:
        path = layout.md(name)
        text = md_files.read_text(path)
        if not text:
            continue
        if name == "files.md":
            notes, inventory = files_md.split(text)
            hit = match.lines_holding(notes)
            if hit:
                kept = [ln for i, ln in enumerate(notes.splitlines()) if i not in set(hit)]
                files_md.write_notes(path, "\n".join(kept))
            left = match.without_lines(inventory)
            if left != inventory:  # a file named with the words: its line goes
                files_md.write_inventory(path, functools.partial(_as_listed, left.splitlines()))
            continue
        doomed = set(match.lines_holding(text))
        if doomed:
            kept = [ln for i, ln in enumerate(text.splitlines()) if i not in doomed]
            atomic_write(path, "\n".join(kept) + ("\n" if kept else ""))


def _spool_files(layout: Layout) -> list[str]:
    folder = layout.memory_dir
    rejected = os.path.join(folder, spool.REJECTED_NAME)
    return [layout.spool, *spool.pending_files(layout.spool), rejected]


def _record_spool(store: Store) -> None:
    """Spooled events recorded into transcript.db (where the erasure cuts them)."""
    for _ in range(5):
        if not spool.waiting(store.layout.spool):
            return
        for taken in spool.to_ingest(store.layout.spool):
            spool.ingest_file(taken, lambda e: store.turns.record_event(e, "spool"))


def _cut_rejected_spool(layout: Layout, match: Forget, report: Report) -> None:
    """Lines set aside as unreadable are kept for a person: cut there too."""
    path = os.path.join(layout.memory_dir, spool.REJECTED_NAME)
    try:
        text = read_text(path) or ""
    except OSError:
        return
    lines = text.splitlines()
    cut = [match.cut_json_text(line) if match.maybe_in(line) else line for line in lines]
    if cut != lines:
        for n, (a, b) in enumerate(zip(lines, cut, strict=True)):
            if a != b:
                report.add("spool", (path, n), "a spooled event")
        atomic_write(path, "\n".join(cut) + "\n")


def _reachable(path: str) -> bool:
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, "memory.db"))


def _backup_store(path: str) -> Store:
    """A backup folder (``wsd backup``'s layout: both databases and the md files in one
    folder) as a Store."""
    return Store(_BackupLayout(path))


class _BackupLayout(Layout):
    """A backup folder seen as a workspace's memory folder."""

    @property
    def memory_dir(self) -> str:
        return self.root

    @property
    def os_dir(self) -> str:
        return self.root


def _erase_backup(path: str, match: Forget | Everything, scope: Scope | None) -> None:
    backup = _backup_store(path)
    backup.migrate()  # a backup taken by an older version: brought to this schema first
    backup.erasure.erase(match, scope=scope)
    if isinstance(match, Forget):
        # A backup taken while this forget (or a person's request for it) was pending holds
        # its words in the journal; found by a test, not seen in the workspace (done there).
        backup.erasure.drop_pending(match)
        _cut_md_on_disk(backup.layout, match, Report([]))
