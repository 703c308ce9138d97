"""Memory benchmarks: retrieval on LoCoMo, search latency at scale, boot-context assembly.

``python -m bench memory_retrieval memory_latency memory_boot`` (or ``make bench``).

Retrieval follows ../shared/data/README.md: every turn (text, plus ``[image: caption]``) or
every observation fact (credited to its dia_ids) is stored through the project's own paths,
each question of categories 1-4 is asked through ``search_memory``, and
recall@k = |gold ∩ dia_ids of the top-k hits| / |gold|. Turns go through the real capture
path (one agent turn per utterance, ``Speaker: text`` as the prompt) and the turn index;
facts go through ``wsd import``'s loader with ``ref`` = their dia_ids. Nothing in
``daemon/`` knows this data set: the adapter below is the only code that reads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import random
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from bench import Row, percentile
from wsd import schema
from wsd.daemon.memory.boot import load_memory
from wsd.daemon.memory.search.core import search_memory
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.daemon.store.archive import import_lines, index_new_turns
from wsd.daemon.store.ledger import Store
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout

DATA = os.environ.get(
    "WSD_LOCOMO",
    os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "locomo-dev.json"),
)
KS = (5, 10)
TARGETS = {"turns": 0.70, "facts": 0.65}


def _dia(value: str) -> list[str]:
    """Normalised dia_ids of an evidence string: split on ``[;\\s]+``, ``D:11:26`` → ``D11:26``."""
    out = []
    for part in re.split(r"[;\s]+", value):
        match = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
        if match:
            out.append(f"D{int(match.group(1))}:{int(match.group(2))}")
    return out


def _sessions(conv: dict[str, Any]) -> Iterator[tuple[int, str, list[dict[str, Any]]]]:
    for key, turns in conv.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(turns, list):
            yield int(match.group(1)), str(conv.get(f"{key}_date_time", "")), turns


def _epoch(when: str) -> float | None:
    try:
        return datetime.strptime(when, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _load_turns(layout: Layout, sample: dict[str, Any]) -> dict[int, list[str]]:
    """Capture every utterance as one agent turn; returns turn-index id -> dia_ids."""
    capture = Capture(CaptureConfig(workspace=layout.root))
    order: list[str] = []
    for number, _when, turns in sorted(_sessions(sample["conversation"])):
        session = f"{sample['sample_id']}-s{number}"
        for turn in turns:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            capture.handle(
                {"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": text}
            )
            capture.handle(
                {"hook_event_name": "Stop", "session_id": session, "last_assistant_message": ""}
            )
            order.append(turn["dia_id"])
    capture.close()
    store = Store(layout)
    while index_new_turns(store):
        pass
    m = schema.connect(layout.memory_db, "memory", readonly=True)
    try:
        ids = [int(r[0]) for r in m.execute("SELECT id FROM turns ORDER BY observation_id")]
    finally:
        m.close()
    return {i: _dia(d) for i, d in zip(ids, order, strict=True)}


def _load_facts(layout: Layout, sample: dict[str, Any]) -> None:
    """Import every observation fact as a learning, its dia_ids as ``ref``."""
    lines = []
    dates = {n: when for n, when, _ in _sessions(sample["conversation"])}
    for key, speakers in sample["observation"].items():
        number = int(re.findall(r"\d+", key)[0])
        for facts in speakers.values():
            for fact, ids in facts:
                ids = ids if isinstance(ids, list) else [ids]
                line: dict[str, Any] = {
                    "type": "fact",
                    "content": fact,
                    "ref": " ".join(ids),
                    "session_id": f"{sample['sample_id']}-s{number}",
                }
                when = _epoch(dates.get(number, ""))
                if when is not None:
                    line["created_at"] = when
                lines.append(json.dumps(line))
    report = import_lines(Store(layout), lines)
    if report.errors:
        raise RuntimeError(f"import errors: {report.errors[:3]}")


def locomo_recall(mode: str, data_path: str = DATA) -> dict[str, float]:
    """recall@k (k in KS) overall and per category for ``mode`` "turns" or "facts"."""
    with open(data_path, encoding="utf-8") as fh:
        samples = json.load(fh)
    scores: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        for sample in samples:
            layout = Layout(os.path.join(tmp, sample["sample_id"]))
            os.makedirs(layout.root)
            init_workspace(layout, user_folders=False)
            turn_dias = _load_turns(layout, sample) if mode == "turns" else {}
            if mode == "facts":
                _load_facts(layout, sample)
            for qa in sample["qa"]:
                category = int(qa.get("category", 0))
                gold = {d for e in qa.get("evidence", []) for d in _dia(str(e))}
                if category not in (1, 2, 3, 4) or not gold:
                    continue
                hits = search_memory(layout, qa["question"], limit=max(KS))
                for k in KS:
                    found: set[str] = set()
                    for hit in hits[:k]:
                        if hit.ref is not None:
                            found.update(_dia(hit.ref))
                        elif hit.id.startswith("T"):
                            found.update(turn_dias.get(int(hit.id[1:]), []))
                    recall = len(gold & found) / len(gold)
                    scores[f"r@{k}"].append(recall)
                    scores[f"r@{k} cat{category}"].append(recall)
    return {key: sum(v) / len(v) for key, v in sorted(scores.items())}


def retrieval() -> list[Row]:
    """recall@5/@10 on LoCoMo (turns indexed; facts imported), overall and per category."""
    if not os.path.exists(DATA):
        return [Row("locomo retrieval", float("nan"), "", "data missing", None, DATA)]
    rows = []
    for mode in ("turns", "facts"):
        started = time.perf_counter()
        result = locomo_recall(mode)
        took = time.perf_counter() - started
        target = TARGETS[mode]
        for key, value in result.items():
            headline = key == "r@10"
            rows.append(
                Row(
                    f"locomo {mode} {key}",
                    value,
                    "recall",
                    f">= {target}" if headline else "-",
                    (value >= target) if headline else None,
                    f"{took:.1f}s" if headline else "",
                )
            )
    return rows


# -- search latency at scale -------------------------------------------------------------

#: Bumped when the generator changes: a cached database from another version is rebuilt.
GENERATOR_VERSION = 1
SCALES = ((100_000, 10.0), (1_000_000, 50.0))
QUERIES = 200


def _vocabulary(rng: random.Random, size: int = 30_000) -> tuple[list[str], list[float]]:
    """Pseudo-words with a Zipf distribution of use, like the words of real notes."""
    syllables = [
        "ka",
        "to",
        "ri",
        "men",
        "sol",
        "va",
        "dre",
        "pin",
        "lo",
        "qua",
        "ber",
        "nis",
        "tel",
        "ro",
        "fa",
        "gu",
        "zen",
        "mi",
        "dor",
        "lak",
        "shu",
        "pe",
        "wy",
        "xo",
    ]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    ordered = sorted(words)
    rng.shuffle(ordered)
    weights = list(itertools.accumulate(1 / (rank + 1) ** 1.05 for rank in range(size)))
    return ordered, weights


_GLUE = [
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "is",
    "for",
    "with",
    "on",
    "user",
    "prefers",
    "uses",
    "project",
    "file",
    "report",
    "always",
    "never",
    "before",
    "after",
]
_TYPES = ("fact", "pattern", "correction", "preference", "tool_install")


def _sentence(rng: random.Random, vocab: list[str], weights: list[float]) -> str:
    words = []
    for word in rng.choices(vocab, cum_weights=weights, k=rng.randint(8, 22)):
        if rng.random() < 0.35:
            words.append(rng.choice(_GLUE))
        words.append(word)
    return " ".join(words)


def _db_name(count: int) -> str:
    digest = hashlib.sha256()
    for step in schema.migrations("memory"):
        with open(step.path, "rb") as fh:
            digest.update(fh.read())
    return f"learnings-{count}-v{GENERATOR_VERSION}-{digest.hexdigest()[:10]}.db"


def synthetic_memory(count: int, folder: str = ".bench") -> str:
    """A memory.db with ``count`` synthetic learnings (cached: building 1M takes ~1 minute)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, _db_name(count))
    if os.path.exists(path):
        return path
    rng = random.Random(count)
    vocab, weights = _vocabulary(rng)
    building = path + ".building"
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(building + suffix)
    conn = schema.connect(building, "memory")
    try:
        schema.migrate(conn, "memory", building)
        start = time.time() - count * 60
        rows = (
            (start + i * 60, f"s{i // 40}", _TYPES[i % 5], text, f"bench:{i}")
            for i in range(count)
            for text in (_sentence(rng, vocab, weights),)
        )
        with schema.write_txn(conn):
            conn.executemany(
                "INSERT INTO learnings (created_at, session_id, type, content,"
                " content_key) VALUES (?, ?, ?, ?, ?)",
                rows,
            )
        conn.execute("INSERT INTO learnings_fts (learnings_fts) VALUES ('optimize')")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    os.replace(building, path)
    return path


def _questions(count: int) -> list[str]:
    rng = random.Random(99)
    vocab, weights = _vocabulary(random.Random(count))
    frames = [
        "What did the user say about {}?",
        "When did we {} the {}?",
        "{} {} {}",
        "How does the user want {} and {} handled?",
        "Where is the {} for {}?",
    ]
    out = []
    for _ in range(QUERIES):
        frame = rng.choice(frames)
        words = rng.choices(vocab, cum_weights=weights, k=frame.count("{}"))
        out.append(frame.format(*words))
    return out


def search_latency() -> list[Row]:
    """p50/p95 of search_memory (connection open included) at 100k and 1M learnings."""
    rows = []
    for count, target in SCALES:
        started = time.perf_counter()
        path = synthetic_memory(count)
        built = time.perf_counter() - started
        queries = _questions(count)
        for query in queries[:20]:  # warm the page cache, as on a live machine
            search_memory(path, query)
        samples = []
        for query in queries:
            t0 = time.perf_counter()
            search_memory(path, query)
            samples.append((time.perf_counter() - t0) * 1000)
        p95 = percentile(samples, 95)
        note = f"p50 {percentile(samples, 50):.1f} ms, {len(samples)} questions"
        if built > 1:
            note += f", db built in {built:.0f}s (cached in .bench/)"
        rows.append(
            Row(
                f"search_memory p95 @ {count:,} learnings",
                p95,
                "ms",
                f"<= {target:g}",
                p95 <= target,
                note,
            )
        )
    return rows


# -- boot context -------------------------------------------------------------------------


def boot_context() -> list[Row]:
    """load_memory() with every file at its line limit and 50 recent learnings."""
    from wsd.daemon.memory.files import LINE_LIMITS

    with tempfile.TemporaryDirectory() as tmp:
        layout = Layout(tmp)
        init_workspace(layout, user_folders=False)
        for name, limit in LINE_LIMITS.items():
            line = f"- a typical {name} line with a path /workspace/documents/x.pdf and a note"
            with open(layout.md(name), "w", encoding="utf-8") as fh:
                fh.write("\n".join(f"{line} {i}" for i in range(limit)) + "\n")
        now = time.time()
        lines = [
            json.dumps(
                {
                    "type": "fact",
                    "content": f"learning {i}: " + "detail " * 30,
                    "created_at": now - i * 600,
                }
            )
            for i in range(50)
        ]
        import_lines(Store(layout), lines)
        samples = []
        for _ in range(200):
            t0 = time.perf_counter()
            text = load_memory(layout)
            samples.append((time.perf_counter() - t0) * 1000)
    p95 = percentile(samples, 95)
    return [
        Row(
            "boot context p95 (full files, 50 learnings)",
            p95,
            "ms",
            "<= 20",
            p95 <= 20,
            f"p50 {percentile(samples, 50):.2f} ms, {len(text):,} chars",
        )
    ]


if __name__ == "__main__":
    import sys

    for mode in sys.argv[1:] or ["turns", "facts"]:
        res = locomo_recall(mode)
        print(mode, " ".join(f"{k}={v:.3f}" for k, v in res.items()))
