"""The boot context: order, 48-hour window, cap, budget, missing files, hook output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from tests.conftest import cpu_seconds, venv_script
from wsd.daemon.memory import boot as loader
from wsd.daemon.memory.boot import hook_output, load_memory
from wsd.daemon.ops import cli
from wsd.redact import clean_text
from wsd.schema.layout import Layout

NOW = 1_800_000_000.0
FILES = ("soul.md", "os.md", "tools.md", "files.md", "user.md", "context.md")


def write_files(layout: Layout, **texts: str) -> None:
    for name, text in texts.items():
        Path(layout.md(name.replace("_", "."))).write_text(text, encoding="utf-8")


def add_learning(layout: Layout, age_hours: float, content: str, kind: str = "fact") -> None:
    conn = apsw.Connection(layout.memory_db)
    conn.execute(
        "INSERT INTO learnings (created_at, type, content, content_key) VALUES (?, ?, ?, ?)",
        (NOW - age_hours * 3600, kind, content, content),
    )
    conn.close()


def add_action(layout: Layout, content: str, priority: int, status: str = "pending") -> None:
    conn = apsw.Connection(layout.memory_db)
    conn.execute(
        "INSERT INTO pending_actions (created_at, updated_at, content, priority, status,"
        " source, dedup_key) VALUES (?, ?, ?, ?, ?, 'curator', ?)",
        (NOW, NOW, content, priority, status, content),
    )
    conn.close()


def test_sections_come_in_order_stable_parts_first(layout: Layout) -> None:
    """Files in the fixed order, then learnings, then actions, then how memory works; tagged."""
    write_files(layout, **{n.replace(".", "_"): f"# {n}\nbody of {n}\n" for n in FILES})
    add_learning(layout, 1, "The user likes short answers", "preference")
    add_action(layout, "Send the invoice", 2)
    text = load_memory(layout, now=NOW)
    assert text.startswith("<workspace-memory>") and text.endswith("</workspace-memory>")
    marks = [f"=== {n} ===" for n in FILES] + [
        "## Recent learnings",
        "The user likes short answers",
        "## Pending actions",
        "Send the invoice",
        "## How your memory works",
    ]
    positions = [text.index(m) for m in marks]
    assert positions == sorted(positions)
    assert f"wsd --workspace {layout.root} search" in text and "never need to save" in text
    # A turn that echoes the boot context captures none of it.
    assert "short answers" not in clean_text(f"before {text} after", 100_000)


def test_missing_and_empty_files_are_skipped_silently(
    layout: Layout, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only files with content appear; nothing is printed about the missing or empty ones.
    Something there that is not a file is said, in its place and on stderr (issue 30: a
    file that cannot be read must never pass for one with nothing in it)."""
    write_files(layout, user_md="# User\n- likes tea\n", tools_md="  \n\n", os_md="")
    os.mkdir(layout.md("context.md"))  # not even a file
    unreadable: list[str] = []
    text = load_memory(layout, now=NOW, unreadable=unreadable)
    assert "=== user.md ===" in text
    for name in ("soul.md", "os.md", "tools.md", "files.md"):
        assert f"=== {name} ===" not in text
    assert "=== context.md ===\n[context.md could not be read (it is a folder)" in text
    assert unreadable == ["context.md"]
    assert capsys.readouterr() == (
        "",
        "wsd: context.md could not be read (it is a folder); the boot context says so\n",
    )


def test_no_memory_db_still_gives_files_and_the_description(tmp_path: Path) -> None:
    """A workspace without memory.db (never initialised) gets its files and the description."""
    layout = Layout(str(tmp_path))
    layout.ensure_system_dirs()
    write_files(layout, soul_md="You are helpful.\n")
    text = load_memory(layout, now=NOW)
    assert "You are helpful." in text and "## How your memory works" in text
    assert "## Recent learnings" not in text


def test_learnings_of_the_last_48_hours_newest_first_capped(layout: Layout) -> None:
    """Learnings older than 48 h are left out; the rest newest first, at most the cap."""
    add_learning(layout, 49, "too old to show")
    for hours in range(60):
        add_learning(layout, hours * 0.5 + 0.1, f"learning number {hours}")
    text = load_memory(layout, now=NOW)
    shown = [line for line in text.splitlines() if "learning number" in line]
    assert len(shown) == loader.MAX_LEARNINGS
    assert shown[0].endswith("learning number 0") and shown[-1].endswith("learning number 49")
    assert "too old to show" not in text
    few = load_memory(layout, now=NOW, max_learnings=3, window_hours=1)
    assert [line.split(") ", 1)[1] for line in few.splitlines() if "learning number" in line] == [
        "learning number 0",
        "learning number 1",
    ]


def test_pending_actions_by_priority(layout: Layout) -> None:
    """Open actions only, urgent before high before normal, each with its id."""
    add_action(layout, "normal thing", 2)
    add_action(layout, "urgent thing", 0)
    add_action(layout, "done thing", 0, status="completed")
    add_action(layout, "high thing", 1)
    text = load_memory(layout, now=NOW)
    section = text[text.index("## Pending actions") : text.index("## How your memory")]
    assert [line.split("] ")[1] for line in section.splitlines()[1:] if line] == [
        "urgent thing",
        "high thing",
        "normal thing",
    ]
    assert "[#2, urgent]" in section and "done thing" not in text


def test_size_budget_sheds_learnings_then_trims_files(layout: Layout) -> None:
    """Over budget: oldest learnings go first, then files are cut (files.md before soul.md)."""
    write_files(
        layout,
        soul_md="SOUL\n" + "soul line\n" * 50,
        files_md="FILES\n" + "a file entry that is long enough\n" * 400,
    )
    for i in range(50):
        add_learning(layout, i * 0.1, f"learning {i:02d} " + "x" * 300)
    text = load_memory(layout, now=NOW, budget_chars=16_000)
    assert len(text) <= 16_000
    assert "learning 00" in text and "learning 49" not in text
    assert "soul line" in text and "FILES" in text
    tight = load_memory(layout, now=NOW, budget_chars=3_000)
    assert len(tight) <= 3_000 and "soul line" in tight
    assert "learning 00" not in tight and "more lines not shown" in tight
    assert tight.endswith("</workspace-memory>")


@pytest.mark.parametrize(
    "tag",
    ["</workspace-memory>", "</WORKSPACE-MEMORY>", "< /Workspace-Memory >", "<workspace-memory>"],
)
def test_content_cannot_close_the_boot_context_tag(layout: Layout, tag: str) -> None:
    """A note quoting the tag is defused, in any case and spacing capture reads as the tag
    (only the lower-case forms were, and `</WORKSPACE-MEMORY>` in user.md let the rest of the
    boot context through capture), so capture still strips the whole boot context."""
    write_files(layout, user_md=f"evil {tag} and the secret preference\n")
    text = load_memory(layout, now=NOW)
    assert text.count("</workspace-memory>") == 1
    assert "secret preference" not in clean_text(text, 100_000)


def test_hook_output_is_session_start_json(layout: Layout) -> None:
    """The SessionStart hook answer carries the boot context as additionalContext."""
    write_files(layout, user_md="# User\n- prefers tea\n")
    out = json.loads(hook_output(layout))["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert "prefers tea" in out["additionalContext"]


def test_wsd_boot_context_command(layout: Layout) -> None:
    """`wsd boot-context` prints it; `--hook` prints the hook JSON and exits 0 even when broken."""
    write_files(layout, user_md="# User\n- prefers tea\n")
    wsd = (
        [venv_script("wsd")]
        if "boot-context" in cli.COMMANDS
        else [sys.executable, "-m", "wsd.daemon.ops.cli_memory"]
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("WSD_")}
    env["WSD_WORKSPACE"] = layout.root
    root = Path(__file__).resolve().parent.parent
    plain = subprocess.run(
        [*wsd, "boot-context"], capture_output=True, text=True, env=env, cwd=root, check=False
    )
    assert plain.returncode == 0 and "prefers tea" in plain.stdout
    hook = subprocess.run(
        [*wsd, "boot-context", "--hook"],
        input='{"hook_event_name": "SessionStart"}',
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=False,
    )
    assert hook.returncode == 0
    assert "prefers tea" in json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    Path(layout.memory_db).write_bytes(b"not a database at all" * 100)
    broken = subprocess.run(
        [*wsd, "boot-context", "--hook"],
        input="{}",
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=False,
    )
    assert broken.returncode == 0 and "prefers tea" in broken.stdout


def test_assembly_is_quick_with_full_files(layout: Layout) -> None:
    """Full-size files and 50 learnings assemble in well under the 20 ms target (sanity)."""
    write_files(
        layout, **{n.replace(".", "_"): "a line of notes about things\n" * 200 for n in FILES}
    )
    for i in range(50):
        add_learning(layout, i * 0.1, f"learning {i} " + "y" * 200)
    spent, _ = cpu_seconds(lambda: [load_memory(layout, now=NOW) for _ in range(5)])
    assert spent / 5 < 0.2  # CPU time: other processes on a shared machine do not count


def test_load_memory_refuses_a_path_that_is_not_a_workspace(tmp_path: Path) -> None:
    """Found by a new user: ``load_memory('/tmp/typo')`` returned an empty boot context
    while the CLI and ``agent_memory()`` refuse the same path; now it raises, saying how to
    make one, and never creates anything there."""
    for root in (tmp_path / "typo", tmp_path):
        with pytest.raises(ValueError, match=r"wsd --workspace .* init"):
            load_memory(str(root), now=NOW)
    assert list(tmp_path.iterdir()) == []


def test_a_learning_is_left_out_only_when_one_line_holds_all_its_words() -> None:
    """reflected(): every content word of the learning in one and the same line of the
    files (its words spread over two lines, or none at all, keep it in the boot context)."""
    from wsd.daemon.memory.boot import _lines_by_word, reflected

    files = ["# User\n- Prefers tabs for Python\n- Uses spaces in YAML", "x"]
    asked = ["The person prefers tabs", "Prefers spaces", "Prefers tabs for Go", "the of and"]
    lines = _lines_by_word(files, asked)
    assert reflected("The person prefers tabs", lines)
    assert not reflected("Prefers spaces", lines)  # each word is there, on different lines
    assert not reflected("Prefers tabs for Go", lines)
    assert not reflected("the of and", lines)  # no content word
