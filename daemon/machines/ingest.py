"""Home's side of many machines (SPEC.md section 11): each listed satellite's sealed turns,
read from home's followed copy of its transcript.db, added to home's transcript.db to be
curated like home's own, exactly once; and home's word to the satellites.

Exactly once, whatever happens to either database (:mod:`wsd.daemon.store.machines`): a turn
is named by its machine and its origin key; home's transcript holds each name once, and a
name memory.db's ``machine_turns`` holds (curated by a batch) is never added again, so a
home transcript.db lost and made again does not curate a satellite's turn twice. A copy
rewound (the satellite's database restored from an older point: the key at home's cursor
is not the one home read there) is read again from its start, and what is new in it comes
in; a recreated database has another identity, and so its own cursor from 0.

Home's word (``home_*`` state in memory.db, which every satellite follows): when home last
looked (``home_beacon``: a satellite's copy is as old as the newest word in it says, so home
says one at least every :data:`BEACON_SECONDS`, and after every ingest) and per machine what
it ingested and when.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import apsw

from wsd.daemon.machines import places
from wsd.daemon.machines.places import files_signature
from wsd.daemon.memory.forget import erase, hold
from wsd.daemon.memory.forget.words import Forget
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.store import CopiedTurn, Store
from wsd.daemon.store import only_marks as only
from wsd.schema.errors import describe

#: The longest home stays silent: a satellite's copy that has no word newer than this (and
#: its follow interval) is stale. 12 tiny transactions an idle hour (``make bench``).
BEACON_SECONDS = 300.0
#: The pending action a hand edit made on an older version opens (never its words).
CONFLICT_ACTION = (
    "{file} was edited by hand on {machine} while it had changed here: both versions are"
    " kept. Ask the person which to keep: `wsd memory conflicts` shows edit #{id} beside the"
    " current file, `wsd memory conflicts --adopt {id}` makes it the current version."
)
#: How often the per-satellite figures (turns ingested, waiting) are counted when no turn
#: came: the count reads every ingested row.
COUNT_SECONDS = 10.0
#: Pages of :data:`wsd.daemon.store.machines.INGEST_ROWS` turns read per machine per pass.
PAGES = 20


@dataclass
class MachineView:
    """What home knows of one satellite, as status, doctor and metrics show it."""

    state: str = "no copy yet"
    identity: str | None = None
    ingested: int = 0
    pending: int = 0
    #: When a turn of it was last added (wall clock), and its newest turn's own time.
    ingested_at: float | None = None
    newest_turn_at: float | None = None
    error: str | None = None


@dataclass(eq=False)
class Home:
    """Ingests the listed satellites' turns each pass and publishes home's word."""

    cfg: Config
    store: Store
    log: Any
    status: StatusFile
    clock: Callable[[], float]
    views: dict[str, MachineView] = field(default_factory=dict)
    #: Told the file a hand edit was adopted into (the md files are written from it).
    on_adopted: Callable[[str], Any] = lambda name: None
    last_beacon: float = field(default=0.0, init=False)
    #: Per machine, the copy's files as the last look that read all of it found them.
    _seen: dict[str, tuple[Any, ...]] = field(default_factory=dict, init=False)
    #: When the ingest figures were last counted (they change only with an ingest or a
    #: curation: counted after one, else every :data:`COUNT_SECONDS`).
    _counted_at: float = field(default=-1e18, init=False)
    _counted_on: tuple[Any, ...] = field(default=(), init=False)
    #: The error last logged per machine (logged again only when it changes).
    _logged: dict[str, str] = field(default_factory=dict, init=False)

    def run(self, now: float) -> int:
        """One look at every listed satellite; how many turns were added."""
        added = 0
        for name in self.cfg.machines:
            view = self.views.setdefault(name, MachineView())
            try:
                added += self._ingest(name, view, now)
            except (apsw.Error, OSError) as exc:
                path = places.satellite_copy(self.store.layout, name)
                view.state = "no copy yet" if not os.path.exists(path) else "unreadable"
                view.error = describe(exc)
                if self._logged.get(name) != view.error:
                    self._logged[name] = view.error
                    self.log.warning("machine_unreadable", machine=name, error=view.error)
                continue
            if name in self._logged:
                del self._logged[name]
                self.log.info("machine_recovered", machine=name)
        self._report(now, added)
        return added

    def _ingest(self, name: str, view: MachineView, now: float) -> int:
        path = places.satellite_copy(self.store.layout, name)
        # Nothing to read when neither the copy (litestream applied nothing) nor home's
        # transcript.db (made again: its cursors gone) changed since a look that read it all:
        # an idle pass costs three stat calls per satellite, not reads and write transactions.
        seen = files_signature(path, path + "-wal", self.store.layout.transcript_db)
        if self._seen.get(name) == seen:
            return 0
        machines = self.store.machines
        added = 0
        drained = False
        for _ in range(PAGES):

            def after_for(identity: str) -> int:
                found = machines.cursor(name, identity)
                return 0 if found is None else found.last_id

            identity, after, at, rows = machines.read_copy(path, after_for)
            if after:
                known = machines.cursor(name, identity)
                if known is not None and at != known.last_key:
                    self.log.warning("machine_rewound", machine=name, cursor=after)
                    machines.forget_cursor(name, identity)
                    continue
            if view.identity not in (None, identity):
                self.log.info("machine_database_new", machine=name)
            view.identity, view.state, view.error = identity, "following", None
            if not rows:
                drained = True
                break
            rows = self._without_forgotten(rows)
            skip = machines.curated_keys(name, [r.key for r in rows])
            n = machines.ingest(name, identity, rows, skip, now)
            added += n
            view.newest_turn_at = max(view.newest_turn_at or 0.0, rows[-1].timestamp)
            if n:
                view.ingested_at = now
        if added:
            self.log.info("machine_ingested", machine=name, turns=added)
        self._hand_edits(name, path, now)
        self._forgets(name, path)
        if drained:
            self._seen[name] = seen
        return added

    def _without_forgotten(self, rows: list[CopiedTurn]) -> list[CopiedTurn]:
        """Each turn with what a forget mark recognises cut out (a satellite back from a
        week offline ships turns holding words forgotten meanwhile: they are never curated)."""
        key, by_len = self.store.erasure.marks()
        if not by_len:
            return rows
        out = []
        for row in rows:
            texts = [row.user_message or "", row.agent_response or "", row.tool_calls_json]
            phrases = self.store.machines.marked_in(texts, key, by_len)
            if phrases:
                cut = Forget.of(phrases)
                row = replace(
                    row,
                    user_message=None if row.user_message is None else cut.cut(row.user_message),
                    agent_response=None
                    if row.agent_response is None
                    else cut.cut(row.agent_response),
                    tool_calls_json=cut.cut_json_text(row.tool_calls_json),
                )
            out.append(row)
        return out

    def _forgets(self, name: str, path: str) -> None:
        """A forget asked on satellite ``name`` (its marks), taken in once: home erases what
        its memory and transcript hold of it, and its marks are home's from now on (every
        other satellite applies them)."""
        machines = self.store.machines
        new = machines.take_marks(name, machines.marks_out_in_copy(path), self.clock())
        if not new:
            return
        key, _ = self.store.erasure.marks()
        by_len = only(new)
        phrases = sorted(
            set(machines.transcript_marked(key, by_len)) | set(machines.memory_marked(key, by_len))
        )
        if phrases:
            with hold.no_backup(self.store.layout):
                done = erase.forget(self.store, phrases, by="cli", all_matches=True)
            self.log.info(
                "forget_from_machine", machine=name, phrases=len(phrases), **done.counts()
            )
        else:
            self.log.info("forget_from_machine", machine=name, phrases=0)

    def _hand_edits(self, name: str, path: str, now: float) -> None:
        """A person's hand edits on satellite ``name``, taken in once each: adopted when
        made on home's latest version, else kept beside it for the person to decide."""
        machines = self.store.machines
        for proposal in machines.proposals_in_copy(path):
            status = machines.take_proposal(
                name,
                proposal,
                now,
                CONFLICT_ACTION.format(file=proposal.file, machine=name, id="{id}"),
            )
            if status is not None:
                self.log.info("hand_edit_taken", machine=name, file=proposal.file, status=status)
                if status == "adopted":
                    self.on_adopted(proposal.file)

    def _report(self, now: float, added: int) -> None:
        # Counted again after an ingest, when home's transcript changed (a curation marks
        # turns processed there), or every COUNT_SECONDS.
        layout = self.store.layout
        written = files_signature(layout.transcript_db, layout.transcript_db + "-wal")
        if (
            not added
            and written == self._counted_on
            and abs(now - self._counted_at) < COUNT_SECONDS
        ):
            return
        self._counted_at, self._counted_on = now, written
        counts = self.store.machines.ingested()
        for name, view in self.views.items():
            total, pending, moved = counts.get(name, (0, 0, None))
            view.ingested, view.pending = total, pending
            view.ingested_at = view.ingested_at or moved
        shown = {name: dict(vars(view)) for name, view in self.views.items()}
        before = self.status.data.get("machines") or {}
        changed = any(
            (before.get(n) or {}).get(k) != v.get(k)
            for n, v in shown.items()
            for k in ("state", "ingested", "pending")
        )
        self.status.update(machines=shown, force=changed)  # a change is said at once
        if added or now - self.last_beacon >= BEACON_SECONDS or now < self.last_beacon:
            word = {
                name: {"ingested": v.ingested, "ingested_at": v.ingested_at}
                for name, v in self.views.items()
            }
            self.store.machines.publish(
                {
                    "home_beacon": repr(now),
                    "home_machine": str(self.cfg.machine),
                    "home_machines": json.dumps(word),
                },
                now,
            )
            self.last_beacon = now
