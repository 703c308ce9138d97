"""wsd metrics and WSD_METRICS_FILE (issue 35, item 1): the fleet's language, parsed back by
prometheus_client's own parsers."""

from __future__ import annotations

import json
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from prometheus_client.parser import text_string_to_metric_families as parse_text

from tests.conftest import (
    daemon_env,
    drain,
    make_worker,
    running_daemon,
    scalar,
    wait_for,
    write_turns,
    wsd,
)
from tests.conftest import query as q
from wsd.daemon.standin.bridge import BridgeStandin, Reply
from wsd.schema.layout import Layout

FACTS = [f"- Fact number {i} about the person" for i in range(19)]
#: A word only the person said: it must never be in a metric.
PRIVATE = "Quillfeather"


def samples(
    text: str, openmetrics: bool = True
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the exposition, keyed by (name, sorted labels); parsing fails on a
    malformed one."""
    parse = parse_om if openmetrics else parse_text
    out = {}
    for family in parse(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    return found[(name, tuple(sorted(labels.items())))]


def _careless(layout: Layout, standin: BridgeStandin) -> None:
    """Three curated batches on the prompt lane: a 20-line context.md, a careless rewrite
    that loses 14 lines (refused: the loss limit) with two lines not in the format, then more.
    (context.md: user.md's lines are also the person's, and grounding keeps a line a rewrite
    leaves out unless they asked for it to go.)"""
    standin.script(
        Reply.text("CONTEXT_MD_UPDATE:\n# Context\n" + "\n".join(FACTS)),
        Reply.text(
            "FACT: The person moved to Lisbon\nthis is not the format\nnor is this\n"
            "CONTEXT_MD_UPDATE:\n# Context\n- Lisbon"
        ),
        Reply.text("FACT: The person likes tea"),
    )
    worker = make_worker(layout, standin, batch_turns=1)
    said = "; ".join(f"fact number {i} about me" for i in range(19))
    write_turns(layout, 1, prompt=f"Remember: {said}. My pen is called {PRIVATE}")
    drain(worker)
    write_turns(layout, 1, start=1, prompt="I moved to Lisbon")
    drain(worker)
    write_turns(layout, 1, start=2, prompt="I like tea")
    drain(worker)
    write_turns(layout, 2, start=3, prompt="Not curated yet")  # the batch size is 1: no flush
    worker.status.update(state="stopped", force=True)


def test_wsd_metrics_prints_openmetrics_that_say_what_the_ledger_and_files_say(
    layout: Layout, standin: BridgeStandin
) -> None:
    """wsd metrics parses as OpenMetrics; turns, batches, tokens, spend, refusals by kind,
    md lines against limits and database sizes equal what the databases and files hold; a
    stopped daemon reads as down; no word the person said is in it."""
    _careless(layout, standin)
    pending = int(
        scalar(layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0")
    )
    env = {"WSD_WORKSPACE": layout.root, "PATH": os.environ["PATH"]}
    text = wsd(env, "metrics").stdout
    assert text.endswith("# EOF\n") and PRIVATE not in text and "Lisbon" not in text
    found = samples(text)
    assert value(found, "wsd_up") == 0
    assert value(found, "wsd_state", state="stopped") == 1
    assert value(found, "wsd_state", state="idle") == 0
    captured = scalar(layout.transcript_db, "SELECT max(id) FROM observations")
    assert value(found, "wsd_turns_captured_total") == captured
    assert value(found, "wsd_turns_pending") == pending > 0
    assert value(found, "wsd_oldest_pending_turn_age_seconds") > 0
    done = scalar(layout.memory_db, "SELECT count(*) FROM batches WHERE status = 'done'")
    assert value(found, "wsd_batches_total", lane="prompt", status="done") == done == 3
    assert value(found, "wsd_batches_total", lane="economy", status="done") == 0
    ((i, o, cost),) = q(
        layout.memory_db, "SELECT sum(input_tokens), sum(output_tokens), sum(cost_usd) FROM batches"
    )
    assert value(found, "wsd_curator_tokens_total", lane="prompt", kind="input") == i
    assert value(found, "wsd_curator_tokens_total", lane="prompt", kind="output") == o
    assert value(found, "wsd_curator_spend_dollars_total", lane="prompt") == pytest.approx(cost)
    assert value(found, "wsd_guard_refusals_total", lane="prompt", kind="loss") == 14
    assert value(found, "wsd_guard_refusals_total", lane="prompt", kind="unread_lines") == 2
    assert value(found, "wsd_guard_refusals_total", lane="prompt", kind="erosion") == 0
    lines = len(Path(layout.md("context.md")).read_text().splitlines())
    assert value(found, "wsd_md_file_lines", file="context.md") == lines == 16
    assert value(found, "wsd_md_file_line_limit", file="context.md") == 200
    size = os.path.getsize(layout.memory_db)
    assert value(found, "wsd_database_size_bytes", db="memory") == size
    assert value(found, "wsd_batches_parked") == 0
    assert value(found, "wsd_budget_paused") == 0
    # The Prometheus text format of the same snapshot parses too (the textfile collector's).
    again = samples(wsd(env, "metrics", "--format", "prometheus").stdout, openmetrics=False)
    assert value(again, "wsd_batches_total", lane="prompt", status="done") == 3


def test_wsd_metrics_on_a_workspace_without_databases_says_down_and_creates_nothing(
    tmp_path: Path,
) -> None:
    """A workspace whose databases are not made yet: the metrics still parse (down, nothing
    pending, sizes 0) and nothing is created."""
    root = tmp_path / "ws"
    (root / ".os").mkdir(parents=True)
    env = {"WSD_WORKSPACE": str(root), "PATH": os.environ["PATH"]}
    found = samples(wsd(env, "metrics").stdout)
    assert value(found, "wsd_up") == 0
    assert value(found, "wsd_database_size_bytes", db="memory") == 0
    assert not (root / ".os" / "memory" / "memory.db").exists()


def test_the_daemon_writes_the_metrics_file_every_pass_paused_or_not(
    layout: Layout, tmp_path: Path
) -> None:
    """With WSD_METRICS_FILE the running daemon rewrites a Prometheus text file (0644, no
    temporary file left beside it): up, its state, the batches it curated; while a rebuild's
    pause holds it off the file says paused at once and is still rewritten each heartbeat
    period; a folder that is missing is logged once (the daemon goes on curating) and the
    file written once it is back; a graceful stop leaves it saying down."""
    from wsd.daemon.runtime import pause

    folder = tmp_path / "textfile"
    target = folder / "wsd.prom"
    log = tmp_path / "d.log"
    with BridgeStandin() as bridge:
        env = daemon_env(layout, bridge, WSD_METRICS_FILE=str(target), WSD_HEARTBEAT_SECONDS="1")
        with running_daemon(env, log):
            write_turns(layout, 2)
            wsd(env, "flush", "--wait", "30")  # curated with the folder missing
            assert wait_for(lambda: '"event": "metrics_write_failed"' in log.read_text())
            folder.mkdir()
            assert wait_for(target.exists)
            assert wait_for(lambda: b"wsd_up 1.0" in target.read_bytes())
            found = samples(target.read_text(), openmetrics=False)
            assert value(found, "wsd_batches_total", lane="prompt", status="done") >= 1
            assert value(found, "wsd_turns_pending") == 0
            assert stat.S_IMODE(os.stat(target).st_mode) == 0o644
            assert os.listdir(folder) == ["wsd.prom"]
            fd = pause.take(layout, "rebuild")
            try:
                assert wait_for(lambda: b"wsd_paused 1.0" in target.read_bytes(), 10)
                before = os.stat(target).st_mtime_ns
                time.sleep(1.5)  # an idle or paused daemon rewrites it once a heartbeat period
                assert os.stat(target).st_mtime_ns > before
            finally:
                pause.release(layout, fd)
    # A graceful stop leaves the file saying down, not its last "up".
    assert value(samples(target.read_text(), openmetrics=False), "wsd_up") == 0
    assert value(samples(target.read_text(), openmetrics=False), "wsd_state", state="stopped") == 1
    text = log.read_text()
    assert text.count('"event": "metrics_write_failed"') == 1
    assert text.count('"event": "metrics_write_recovered"') == 1


@pytest.mark.parametrize("bad", ["wsd.prom", "/tmp/wsd.txt", "relative/x.prom"])
def test_a_bad_metrics_path_stops_wsd_run_naming_the_setting(
    layout: Layout, tmp_path: Path, bad: str
) -> None:
    """WSD_METRICS_FILE must be an absolute path ending in .prom: anything else stops wsd run
    with exit 2 and a line naming the setting."""
    with BridgeStandin() as bridge:
        env = daemon_env(layout, bridge, WSD_METRICS_FILE=bad)
        done = wsd(env, "run", check=False, timeout=30)
    assert done.returncode == 2 and "WSD_METRICS_FILE" in done.stderr


def _documented(start: str, end: str) -> list[str]:
    """The field names the README documents between ``start`` and ``end`` (top level only:
    what is said in parentheses is about a field, not one)."""
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    part = readme[readme.index(start) + len(start) : readme.index(end)]
    while "(" in part:  # innermost first, so nested parentheses go too
        part = re.sub(r"\([^()]*\)", "", part)
    return re.findall(r"`([a-z_]+)`", part)


def test_status_and_doctor_json_carry_their_schema_and_every_documented_field(
    layout: Layout, standin: BridgeStandin
) -> None:
    """wsd status --json and wsd doctor --json name their schema (wsd.status/1,
    wsd.doctor/1) and hold exactly the fields the README documents for it, in a workspace
    that has curated and in one whose databases are not made yet."""
    _careless(layout, standin)
    env = {"WSD_WORKSPACE": layout.root, "PATH": os.environ["PATH"]}
    status = json.loads(wsd(env, "status", "--json").stdout)
    assert status["schema"] == "wsd.status/1"
    assert list(status) == _documented("`wsd.status/1` (exit 0), one object:", "A\nworkspace")
    doctor = json.loads(wsd(env, "doctor", "--json", check=False).stdout)
    assert doctor["schema"] == "wsd.doctor/1"
    assert list(doctor) == [*_documented("`wsd.doctor/1`", "`findings`:"), "findings"]
    for finding in doctor["findings"]:
        assert list(finding) == _documented("`findings`: each", "### One memory, many machines")
    os.remove(layout.memory_db)
    unready = json.loads(wsd(env, "status", "--json", check=False).stdout)
    assert list(unready) == _documented("gives instead (exit 1):", "`wsd.doctor/1`")
    assert unready["schema"] == "wsd.status/1"
