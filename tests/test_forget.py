"""Forgetting that is complete (issue 33): a dry run first, then the words gone from every
byte the workspace holds and its backups, never coming back through a rebuild or a restore."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.conftest import (
    drain,
    make_worker,
    query,
    scalar,
    write_turns,
    wsd,
)
from wsd.daemon.memory.forget.words import MARK, BadWords, Forget
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.schema.layout import Layout

SECRET = "Lincoln Elementary"
PROMPTS = [
    "I prefer tabs over spaces. My daughter Emma goes to Lincoln Elementary. Thanks!",
    "Please always use black for formatting",
    "From now on I want the reports in report.pdf",
    "I really like that lincoln  ELEMENTARY has a garden. Anyway, pip install rich",
    "I prefer short answers",
]


def words_anywhere(folder: str | Path, words: str) -> list[str]:
    """Every file under ``folder`` whose bytes hold ``words`` (as whole words, any case,
    any run of spaces or punctuation between them), as text, UTF-16 or a JSON escape."""
    parts = [re.escape(w) for w in words.split()]
    pattern = re.compile(r"(?<![A-Za-z])" + r"[\W_]{1,6}".join(parts) + r"(?![a-z])", re.I)
    hits = []
    for base, _dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(base, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            data = Path(path).read_bytes()
            text = data.decode("latin-1")
            utf16 = data.replace(b"\x00", b"").decode("latin-1")
            if pattern.search(text) or pattern.search(utf16):
                hits.append(os.path.relpath(path, folder))
    return hits


def _curated(layout: Layout, standin: BridgeStandin) -> None:
    worker = make_worker(layout, standin, batch_turns=1)
    for i, prompt in enumerate(PROMPTS):
        write_turns(layout, 1, start=i, prompt=prompt)
    drain(worker)
    worker.status.update(state="stopped", force=True)  # as a worker that stopped says


def test_phrases_match_as_the_index_tokenizes() -> None:
    """Words match whole, in any case and accent, stemmed ("schools" for "school"), a
    phrase its words in order; a match inside a longer word is none."""
    f = Forget.of(["Lincoln school"])
    assert f.holds("the LINCOLN Schools board")
    assert not f.holds("the school of Lincoln")
    assert not f.holds("lincolnschool")
    assert Forget.of(["muller"]).holds("Herr Müller")
    assert Forget.of(["anna"]).holds("Anna's bike") and not Forget.of(["anna"]).holds("annals")


def test_a_turn_keeps_what_does_not_hold_the_words() -> None:
    """In a turn the sentence holding the words is cut and marked; the rest stays."""
    f = Forget.of([SECRET])
    text = "I prefer tabs. My daughter goes to Lincoln Elementary. Thanks!"
    assert f.cut(text) == f"I prefer tabs. {MARK} Thanks!"
    raw = json.dumps({"prompt": text, "n": 3})
    assert json.loads(f.cut_json_text(raw)) == {"prompt": f"I prefer tabs. {MARK} Thanks!", "n": 3}


@pytest.mark.parametrize("words", ["", "   ", "...", "x", "é"])
def test_words_that_name_nothing_are_refused(words: str) -> None:
    """Empty, punctuation-only or one-letter words are refused with a reason."""
    with pytest.raises(BadWords):
        Forget.of([words])


def test_dry_run_changes_nothing_and_shows_the_blast_radius(
    layout: Layout, standin: BridgeStandin
) -> None:
    """``wsd forget WORDS`` without --yes prints counts and samples per kind, and no byte
    of the workspace changes."""
    _curated(layout, standin)
    env = {"WSD_WORKSPACE": layout.root, "PATH": os.environ["PATH"]}
    before = {p: Path(p).read_bytes() for p in _files(layout.root)}
    out = wsd(env, "forget", SECRET, "--json").stdout
    report = json.loads(out)
    assert report["erased"] is False
    assert report["counts"]["turns"] == 2
    assert report["counts"]["learnings"] >= 1
    assert any(SECRET.lower() in s.lower() for s in report["samples"]["turns"])
    after = {p: Path(p).read_bytes() for p in _files(layout.root)}
    assert after == before


def _files(root: str) -> list[str]:
    """Every file but SQLite's WAL index and an empty WAL (a reader's open makes them)."""
    out = []
    for base, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(base, name)
            if name.endswith("-shm") or (name.endswith("-wal") and not os.path.getsize(path)):
                continue
            out.append(path)
    return sorted(out)


def test_forget_yes_leaves_no_byte_of_the_words(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """After ``wsd forget WORDS --yes`` no file under .os/ (nor the backup taken before)
    holds the words in any case; the FTS vocabularies have no term of them; what did not
    hold them stays (the rest of each turn, other learnings)."""
    _curated(layout, standin)
    env = {"WSD_WORKSPACE": layout.root, "PATH": os.environ["PATH"]}
    backup = tmp_path / "backup"
    wsd(env, "backup", str(backup))
    assert words_anywhere(layout.os_dir, SECRET)  # the scan sees them before
    assert words_anywhere(backup, SECRET)
    learnings = scalar(layout.memory_db, "SELECT count(*) FROM learnings")
    result = wsd(env, "forget", SECRET, "--yes", "--json")
    report = json.loads(result.stdout)
    assert report["erased"] is True and report["counts"]["backups"] == 1
    assert words_anywhere(layout.os_dir, SECRET) == []
    assert words_anywhere(backup, SECRET) == []
    for table in ("learnings_vocab", "turns_vocab"):
        terms = {t for (t,) in query(layout.memory_db, f"SELECT term FROM {table}")}
        assert not {"lincoln", "elementari"} & terms, table
    # What did not hold the words is still there.
    kept = query(layout.transcript_db, "SELECT user_message FROM observations ORDER BY id")
    assert kept[0][0] == f"I prefer tabs over spaces. {MARK} Thanks!"
    assert kept[1][0] == PROMPTS[1]
    assert 0 < scalar(layout.memory_db, "SELECT count(*) FROM learnings") < learnings
    assert "black" in Path(layout.md("user.md")).read_text()
    # The log says that it happened, never what.
    status = json.loads(wsd(env, "status", "--json").stdout)
    assert status["last_forget"]["counts"]["turns"] == 2
    assert SECRET.lower() not in json.dumps(status).lower()
    assert SECRET not in result.stderr + result.stdout
