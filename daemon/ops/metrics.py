"""``wsd metrics`` and ``WSD_METRICS_FILE``: how a daemon is, in the fleet's language.

One read-only snapshot of a workspace (its heartbeat, both databases, the memory files),
as metric families built with prometheus_client (it writes both text formats and parses
them back in the tests): ``wsd metrics`` prints OpenMetrics; the daemon writes the same
families each pass to ``WSD_METRICS_FILE`` in the Prometheus text format, which is what
node_exporter's textfile collector parses (its parser reads an OpenMetrics counter's
``_total`` sample as a new untyped metric). No port is opened.

Names follow Prometheus' rules: the ``wsd_`` prefix, base units (seconds, bytes; spend in
dollars), counters ending ``_total``. A label holds only a value from a fixed set (a lane, a
state, a file name, a kind of refusal): never what a person said.

The ledger's totals (a scan of every batch) and the day's spend are the costly reads:
:class:`Snapshotter` keeps them until a batch or a charge is added (the newest ids, two index
look-ups), the UTC day turns, or ten minutes pass, so an idle daemon reads only what is cheap;
and :class:`MetricsFile` rewrites an idle daemon's file once a heartbeat period.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import apsw
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from wsd.daemon.memory.md import files_md
from wsd.daemon.memory.md.files import line_limits, read_text
from wsd.daemon.replica import position
from wsd.daemon.replica.position import Replication
from wsd.daemon.runtime.fsio import atomic_write
from wsd.daemon.runtime.heartbeat import State, beats, package_version, read_status
from wsd.daemon.runtime.pause import pause_requested
from wsd.daemon.store import Store
from wsd.schema import KINDS
from wsd.schema.errors import describe
from wsd.schema.layout import CURATED_FILES, Layout

#: The ledger's totals are read again after this long even when nothing was added (a batch
#: a retry or a rebuild changed in place).
LEDGER_SECONDS = 600.0
#: Kinds of refusal counted (see schema 012_refusal_kinds.sql); always present, zero or not.
REFUSAL_KINDS = ("loss", "erosion", "edit", "ungrounded", "unread_lines")
LANES = ("prompt", "economy")


@dataclass
class Snapshot:
    """What the families are built from (all read at ``now``)."""

    now: float
    beat: dict[str, Any] | None
    backlog_pending: int = 0
    oldest_pending_age: float | None = None
    turns_captured: int = 0
    ledger: dict[str, Any] = field(default_factory=dict)
    parked: int = 0
    in_flight: list[dict[str, Any]] = field(default_factory=list)
    spent_today: float = 0.0
    budget_usd: float = 0.0
    forgets_unfinished: int = 0
    vectors: tuple[int, int] | None = None
    md: dict[str, tuple[int, int]] = field(default_factory=dict)
    files: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: A wsd rebuild, forget or import holds the daemon off (a live pause file).
    paused: bool = False
    #: Replication as the daemon's reported settings have it (off when they say nothing).
    replication: Replication = field(default_factory=lambda: Replication(enabled=False))


class Snapshotter:
    """Reads a :class:`Snapshot` of one workspace; keeps the ledger's totals between passes
    that committed nothing (see the module)."""

    def __init__(self, store: Store, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        #: (change key, ledger totals, parked batches, the day's spend): the costly reads.
        self._ledger: tuple[tuple[int, int, int], dict[str, Any], int, float] | None = None
        self._at = 0.0

    def changed(self) -> None:
        """A batch was committed (or parked): read the ledger and the spend again next time."""
        self._ledger = None

    def replication(self, now: float, beat: dict[str, Any] | None = None) -> Replication:
        """Replication as the daemon's reported settings have it (a few questions to
        litestream's control socket; off, and nothing asked, when they say nothing)."""
        beat = read_status(self.store.layout) if beat is None else beat
        reported = (beat or {}).get("settings")
        settings = position.settings_of(reported if isinstance(reported, dict) else {})
        return position.read(self.store.layout, settings.url, settings.max_lag_seconds, now)

    def take(self, now: float | None = None, replication: Replication | None = None) -> Snapshot:
        """The workspace now (read-only: a workspace whose databases are not made yet gives
        the heartbeat and the file sizes alone, and nothing is created); ``replication``
        when it was just read."""
        now = self.clock() if now is None else now
        store, layout = self.store, self.store.layout
        beat = read_status(layout)
        snap = Snapshot(now=now, beat=beat, files=_database_sizes(layout))
        snap.paused = pause_requested(layout)
        snap.replication = replication or self.replication(now, beat)
        if store.maintenance.unready():  # nothing to read yet: the daemon makes them
            return snap
        with store.session():  # one connection per database for the whole snapshot
            self._read(snap, beat, now)
        return snap

    def _read(self, snap: Snapshot, beat: dict[str, Any] | None, now: float) -> None:
        from wsd.daemon.curation.bridge.spend import Budget
        from wsd.daemon.curation.economy import lane as economy

        store, layout = self.store, self.store.layout
        backlog = store.turns.backlog()
        snap.backlog_pending = backlog.pending
        snap.oldest_pending_age = backlog.age(now)
        snap.turns_captured = backlog.last_turn_id
        # Read again when a batch or a charge was added (each key an index look-up), the UTC
        # day turned, or LEDGER_SECONDS passed: a ledger scan costs ~10 ms per 1,500 batches.
        key = (store.ledger.newest_id(), store.charges.newest_id(), int(now // 86400))
        if self._ledger is None or self._ledger[0] != key or now - self._at >= LEDGER_SECONDS:
            budget = Budget(store, 0.0)
            budget.remember((beat or {}).get("spent_today"))
            self._at = now
            ledger = store.ledger.metrics()
            parked = sum(r["count"] for r in ledger["batches"] if r["status"] == "failed")
            self._ledger = (key, ledger, parked, budget.spent_today(now))
        _key, snap.ledger, snap.parked, snap.spent_today = self._ledger
        snap.in_flight = economy.report(store, "", now)["in_flight"]
        settings = (beat or {}).get("settings")
        cap = settings.get("daily_budget_usd") if isinstance(settings, dict) else None
        snap.budget_usd = float(cap) if isinstance(cap, int | float) else 0.0
        snap.forgets_unfinished = len(store.erasure.journal_pending())
        if (beat or {}).get("semantic") == "on":
            snap.vectors = store.vectors.counts()
        limits = line_limits()
        for name in CURATED_FILES:
            text = read_text(layout.md(name)) or ""
            if name == "files.md":  # its limit is its notes' (the inventory is the watcher's)
                text = files_md.notes_of(text)
            snap.md[name] = (len(text.splitlines()), limits[name])


@functools.cache
def _version() -> str:
    return package_version()  # reading the package metadata costs ~5 ms


def _database_sizes(layout: Layout) -> dict[str, tuple[int, int]]:
    """Each database's file and WAL sizes in bytes (0 for one not there)."""
    out: dict[str, tuple[int, int]] = {}
    for kind in KINDS:
        path = layout.memory_db if kind == "memory" else layout.transcript_db
        out[kind] = (_size(path), _size(path + "-wal"))
    return out


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def families(snap: Snapshot) -> Iterator[Metric]:
    """The metric families of a snapshot (see the README's "Operating a fleet")."""
    beat = snap.beat or {}
    info = GaugeMetricFamily(
        "wsd_build_info", "The package version of this wsd (always 1).", labels=["version"]
    )
    info.add_metric([_version()], 1)
    yield info
    yield GaugeMetricFamily(
        "wsd_up", "1 while a daemon runs on this workspace (live pid, fresh heartbeat).",
        value=1 if beats(snap.beat, snap.now) else 0,
    )  # fmt: skip
    at = beat.get("heartbeat_at")
    if isinstance(at, int | float):
        yield GaugeMetricFamily(
            "wsd_heartbeat_timestamp_seconds", "When the daemon last wrote its heartbeat.",
            value=float(at), unit="seconds",
        )  # fmt: skip
        yield GaugeMetricFamily(
            "wsd_heartbeat_age_seconds", "Seconds since the daemon's last heartbeat.",
            value=max(0.0, snap.now - float(at)), unit="seconds",
        )  # fmt: skip
    state = GaugeMetricFamily(
        "wsd_state", "The daemon's state (1 for the one it is in).", labels=["state"]
    )
    current = beat.get("state") if beats(snap.beat, snap.now) else State.STOPPED
    for member in State:
        state.add_metric([member.value], 1 if member.value == current else 0)
    yield state
    yield CounterMetricFamily(
        "wsd_turns_captured", "Turns the hooks have recorded.", value=snap.turns_captured
    )
    yield GaugeMetricFamily(
        "wsd_turns_pending", "Turns not curated yet.", value=snap.backlog_pending
    )
    yield GaugeMetricFamily(
        "wsd_oldest_pending_turn_age_seconds",
        "How long the oldest turn not curated yet has waited (0: none waits).",
        value=max(0.0, snap.oldest_pending_age or 0.0), unit="seconds",
    )  # fmt: skip
    yield from _ledger_families(snap)
    yield from _flag_families(snap)
    yield from _file_families(snap)
    yield from _replica_families(snap.replication)
    yield from _machine_families(beat, snap.now)


def _machine_families(beat: dict[str, Any], now: float) -> Iterator[Metric]:
    """One memory on many machines (SPEC.md section 11), from the heartbeat: this machine's
    role; a satellite's copy age; home's ingest of each satellite. Nothing on a machine
    alone."""
    settings = beat.get("settings")
    role = settings.get("role") if isinstance(settings, dict) else None
    if not isinstance(settings, dict) or not settings.get("home_url") or not role:
        return
    roles = GaugeMetricFamily(
        "wsd_machines_role", "1 for this machine's role (home or satellite).", labels=["role"]
    )
    roles.add_metric([str(role)], 1)
    yield roles
    copy = beat.get("home_copy")
    if isinstance(copy, dict) and isinstance(copy.get("home_said_at"), int | float):
        yield GaugeMetricFamily(
            "wsd_home_copy_age_seconds",
            "Age of this satellite's copy of home's memory (home's newest word in it).",
            value=max(0.0, now - float(copy["home_said_at"])), unit="seconds",
        )  # fmt: skip
    views = beat.get("machines")
    if not isinstance(views, dict) or not views:
        return
    ingested = CounterMetricFamily(
        "wsd_machine_ingested_turns", "A satellite's turns home took in to curate.",
        labels=["machine"],
    )  # fmt: skip
    pending = GaugeMetricFamily(
        "wsd_machine_pending_turns", "A satellite's turns home took in, not curated yet.",
        labels=["machine"],
    )  # fmt: skip
    newest = GaugeMetricFamily(
        "wsd_machine_newest_turn_age_seconds",
        "Age of the newest turn of a satellite home has seen (a satellite gone quiet, or cut"
        " off).",
        labels=["machine"], unit="seconds",
    )  # fmt: skip
    for name, view in sorted(views.items()):
        if not isinstance(view, dict):
            continue
        ingested.add_metric([str(name)], float(view.get("ingested") or 0))
        pending.add_metric([str(name)], float(view.get("pending") or 0))
        at = view.get("newest_turn_at")
        if isinstance(at, int | float):
            newest.add_metric([str(name)], max(0.0, now - float(at)))
    yield ingested
    yield pending
    yield newest


def _replica_families(rep: Replication) -> Iterator[Metric]:
    """Replication with litestream (WSD_REPLICA_URL): on, running, how far behind."""
    yield GaugeMetricFamily(
        "wsd_replica_enabled", "1 when WSD_REPLICA_URL turns replication on.",
        value=1 if rep.enabled else 0,
    )  # fmt: skip
    if not rep.enabled:
        return
    yield GaugeMetricFamily(
        "wsd_replica_up", "1 while litestream runs (0 while an erasure holds it off too).",
        value=1 if rep.running else 0,
    )  # fmt: skip
    yield GaugeMetricFamily(
        "wsd_replica_max_lag_seconds", "WSD_REPLICA_MAX_LAG_SECONDS: doctor fails past it.",
        value=rep.max_lag_seconds, unit="seconds",
    )  # fmt: skip
    lag = GaugeMetricFamily(
        "wsd_replica_lag_seconds",
        "Age of the oldest change not yet on the replica (0: it has everything).",
        labels=["db"], unit="seconds",
    )  # fmt: skip
    for p in rep.databases:
        if p.lag_seconds is not None:
            lag.add_metric([p.kind], p.lag_seconds)
    yield lag


def _flag_families(snap: Snapshot) -> Iterator[Metric]:
    """What waits or is stuck: parked batches, Message Batches out, the cap, pauses."""
    beat = snap.beat or {}
    yield GaugeMetricFamily(
        "wsd_batches_parked", "Batches parked (failed for good; wsd retry runs them again).",
        value=snap.parked,
    )  # fmt: skip
    yield GaugeMetricFamily(
        "wsd_message_batches_in_flight", "Message Batches submitted and not yet applied.",
        value=len(snap.in_flight),
    )  # fmt: skip
    ages = [float(b["age_s"]) for b in snap.in_flight if isinstance(b.get("age_s"), int | float)]
    yield GaugeMetricFamily(
        "wsd_message_batch_oldest_age_seconds",
        "Age of the oldest Message Batch in flight (0: none).",
        value=max(ages, default=0.0), unit="seconds",
    )  # fmt: skip
    yield GaugeMetricFamily(
        "wsd_spend_today_dollars", "Curator spend of the current UTC day, in US dollars.",
        value=snap.spent_today,
    )  # fmt: skip
    yield GaugeMetricFamily(
        "wsd_daily_budget_dollars",
        "WSD_DAILY_BUDGET_USD as the daemon reports it (0: no cap).", value=snap.budget_usd,
    )  # fmt: skip
    yield GaugeMetricFamily(
        "wsd_budget_paused", "1 while curation waits for the next UTC day (the cap reached).",
        value=1 if beat.get("budget") else 0,
    )  # fmt: skip
    yield GaugeMetricFamily(
        "wsd_paused", "1 while a wsd rebuild, forget or import holds the daemon off.",
        value=1 if snap.paused else 0,
    )  # fmt: skip
    yield GaugeMetricFamily(
        "wsd_forgets_unfinished", "Erasures begun and not finished (a kill midway).",
        value=snap.forgets_unfinished,
    )  # fmt: skip
    yield GaugeMetricFamily(
        "wsd_md_write_failed", "1 while a curated file could not be written.",
        value=1 if beat.get("md_write_failed") else 0,
    )  # fmt: skip
    if snap.vectors is not None:
        done, total = snap.vectors
        yield GaugeMetricFamily(
            "wsd_semantic_vectors_pending", "Memories still waiting for a semantic vector.",
            value=max(0, total - done),
        )  # fmt: skip


def _file_families(snap: Snapshot) -> Iterator[Metric]:
    """The curated files against their limits, and the databases' sizes."""
    lines = GaugeMetricFamily("wsd_md_file_lines", "Lines of a curated file.", labels=["file"])
    limit = GaugeMetricFamily(
        "wsd_md_file_line_limit", "The line limit of a curated file.", labels=["file"]
    )
    for name, (n, cap) in snap.md.items():
        lines.add_metric([name], n)
        limit.add_metric([name], cap)
    yield lines
    yield limit
    size = GaugeMetricFamily(
        "wsd_database_size_bytes", "Size of a database file.", labels=["db"], unit="bytes"
    )
    wal = GaugeMetricFamily(
        "wsd_database_wal_size_bytes", "Size of a database's WAL.", labels=["db"], unit="bytes"
    )
    for kind, (main, log) in snap.files.items():
        size.add_metric([kind], main)
        wal.add_metric([kind], log)
    yield size
    yield wal


def _ledger_families(snap: Snapshot) -> Iterator[Metric]:
    rows = snap.ledger.get("batches", [])
    batches = CounterMetricFamily(
        "wsd_batches", "Batches curated (done) or parked, per lane.", labels=["lane", "status"]
    )
    retries = CounterMetricFamily(
        "wsd_batch_retries", "Curator calls tried again within a batch.", labels=["lane"]
    )
    tokens = CounterMetricFamily(
        "wsd_curator_tokens", "Curator tokens, per lane and kind.", labels=["lane", "kind"]
    )
    spend = CounterMetricFamily(
        "wsd_curator_spend_dollars", "Curator spend in US dollars, per lane.", labels=["lane"]
    )
    refusals = CounterMetricFamily(
        "wsd_guard_refusals",
        "What the guards refused of the curator's replies, per lane and kind.",
        labels=["lane", "kind"],
    )
    done: dict[tuple[str, str], int] = {(lane, s): 0 for lane in LANES for s in ("done", "parked")}
    retried = dict.fromkeys(LANES, 0)
    kinds = ("input", "output", "cache_read", "cache_write")
    used = {(lane, k): 0 for lane in LANES for k in kinds}
    spent = dict.fromkeys(LANES, 0.0)
    for row in rows:
        lane = row["lane"]
        status = "parked" if row["status"] == "failed" else row["status"]
        done[(lane, status)] = done.get((lane, status), 0) + row["count"]
        retried[lane] = retried.get(lane, 0) + row["retries"]
        for kind in kinds:
            used[(lane, kind)] = used.get((lane, kind), 0) + row["tokens"][kind]
        spent[lane] = spent.get(lane, 0.0) + row["cost_usd"]
    refused = {(lane, k): 0 for lane in LANES for k in REFUSAL_KINDS}
    for lane, kind, n in snap.ledger.get("refusals", []):
        if kind in REFUSAL_KINDS:  # a kind this version does not know is not a label
            refused[(lane, kind)] = refused.get((lane, kind), 0) + n
    for (lane, status), n in sorted(done.items()):
        batches.add_metric([lane, status], n)
    for lane, n in sorted(retried.items()):
        retries.add_metric([lane], n)
    for (lane, kind), n in sorted(used.items()):
        tokens.add_metric([lane, kind], n)
    for lane, usd in sorted(spent.items()):
        spend.add_metric([lane], usd)
    for (lane, kind), n in sorted(refused.items()):
        refusals.add_metric([lane, kind], n)
    yield from (batches, retries, tokens, spend, refusals)


class _Families(Collector):
    def __init__(self, metrics: Iterable[Metric]) -> None:
        self.metrics = list(metrics)

    def collect(self) -> Iterable[Metric]:
        return self.metrics


def registry(snap: Snapshot) -> CollectorRegistry:
    """A registry of its own (never the global one) holding the snapshot's families."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Families(families(snap)))
    return reg


def openmetrics(snap: Snapshot) -> bytes:
    """The snapshot as OpenMetrics text (``wsd metrics``)."""
    from prometheus_client.openmetrics.exposition import generate_latest

    data: bytes = generate_latest(registry(snap))  # type: ignore[no-untyped-call]
    return data


def prometheus_text(snap: Snapshot) -> bytes:
    """The snapshot as the Prometheus text format (the textfile collector's)."""
    from prometheus_client.exposition import generate_latest

    return generate_latest(registry(snap))


class MetricsFile:
    """The daemon's ``WSD_METRICS_FILE``: rewritten atomically after every pass (a reader
    never sees half a file). A write that fails (disk full, the folder gone) is logged once
    until one succeeds again; it never stops the loop."""

    def __init__(
        self,
        path: str,
        store: Store,
        log: Any,
        every: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self.snapshots = Snapshotter(store)
        self.log = log
        self.every = every
        self.monotonic = monotonic
        self.failing: str | None = None
        #: Replication was on at the last write (the daemon's reported settings): only then
        #: is litestream asked on a pass the file might not be written.
        self._replicating = False
        #: (when written, what the pass did, replication's state then)
        self._last: tuple[float, str, tuple[object, ...]] | None = None

    def after(self, action: str, committed: bool) -> None:
        """After a pass that did ``action``: written at once when it did something else than
        the pass before, committed a batch, or replication is on and not caught up (a lag
        grows by the second: the file said 0 while ``wsd status`` said 15 s behind) or
        changed state; else at most once per ``every`` seconds (the heartbeat's period: a
        daemon that idles rewrites it as often as it beats, not on every 2 s poll, which cost
        about 1 % of a core on a large workspace; replication's own questions are four local
        socket requests)."""
        now = self.monotonic()
        replication = self.snapshots.replication(time.time()) if self._replicating else None
        state = _replication_state(replication)
        if committed:
            self.snapshots.changed()
        elif self._last is not None:
            at, before, was = self._last
            caught_up = replication is None or replication.caught_up()
            if before == action and was == state and caught_up and now - at < self.every:
                return
        self._last = (now, action, state)
        self.write(replication)

    def write(self, replication: Replication | None = None) -> None:
        try:
            snap = self.snapshots.take(replication=replication)
            self._replicating = snap.replication.enabled
            data = prometheus_text(snap)
            # Readable by node_exporter's user (nothing in it is the person's); not fsynced:
            # the next pass writes it again, a crash losing it loses nothing.
            atomic_write(self.path, data.decode("utf-8"), mode=0o644, durable=False)
        except (OSError, apsw.Error) as exc:
            problem = describe(exc)
            if problem != self.failing:
                self.failing = problem
                self.log.warning("metrics_write_failed", path=self.path, error=problem)
            return
        if self.failing is not None:
            self.failing = None
            self.log.info("metrics_write_recovered", path=self.path)


def _replication_state(rep: Replication | None) -> tuple[object, ...]:
    """What a change of makes the file be written again: on, running, held, each database's
    error (or none)."""
    if rep is None:
        return ()
    return (rep.enabled, rep.running, rep.held, tuple((p.kind, p.error) for p in rep.databases))
