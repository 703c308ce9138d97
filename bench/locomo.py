"""LoCoMo development set (../shared/data/README.md): the workspaces, the questions, recall.

Every turn (text, plus ``[image: caption]``) goes through the real capture path and the turn
index; every observation fact goes through ``wsd import``'s loader with ``ref`` = its
dia_ids. recall@k = |gold ∩ dia_ids of the top-k hits| / |gold| over the questions of
categories 1-4, overall, per category and per conversation. Nothing in ``daemon/`` knows
this data set: this adapter is the only code that reads it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from wsd import schema
from wsd.daemon.memory.search.core import Hit, search_memory
from wsd.daemon.memory.search.text import STOP_WORDS, clean_query, spans, tokenizer
from wsd.daemon.memory.transfer import importer
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.daemon.store import Store
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout

DATA = os.environ.get(
    "WSD_LOCOMO",
    os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "locomo-dev.json"),
)
KS = (5, 10)
MODES = ("turns", "facts")
CONVERSATIONS = ("conv-26", "conv-30")

#: A ranking under test: (workspace, question, limit) -> hits.
Search = Callable[[Layout, str, int], list[Hit]]


def dia_ids(value: str) -> list[str]:
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


def load_turns(layout: Layout, sample: dict[str, Any]) -> dict[int, list[str]]:
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
    while store.archive.index_new_turns():
        pass
    m = schema.connect(layout.memory_db, "memory", readonly=True)
    try:
        ids = [int(r[0]) for r in m.execute("SELECT id FROM turns ORDER BY observation_id")]
    finally:
        m.close()
    return {i: dia_ids(d) for i, d in zip(ids, order, strict=True)}


def load_facts(layout: Layout, sample: dict[str, Any]) -> None:
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
    data = io.BytesIO("".join(line + "\n" for line in lines).encode())
    importer.run(layout, Store(layout), "-", stdin=data)  # raises on a bad line


@dataclass
class Workspace:
    """One conversation loaded one way (turns or facts)."""

    mode: str
    conversation: str
    layout: Layout
    sample: dict[str, Any]
    turn_dias: dict[int, list[str]] = field(default_factory=dict)

    def credited(self, hit: Hit) -> set[str]:
        if hit.ref is not None:
            return set(dia_ids(hit.ref))
        if hit.id.startswith("T"):
            return set(self.turn_dias.get(int(hit.id[1:]), []))
        return set()


@contextlib.contextmanager
def workspaces(data_path: str = DATA) -> Iterator[list[Workspace]]:
    """Every development conversation loaded both ways, in a temporary folder."""
    with open(data_path, encoding="utf-8") as fh:
        samples = json.load(fh)
    with tempfile.TemporaryDirectory(prefix="wsd-locomo-") as tmp:
        out = []
        for mode in MODES:
            for sample in samples:
                layout = Layout(os.path.join(tmp, mode, sample["sample_id"]))
                os.makedirs(layout.root)
                init_workspace(layout, user_folders=False)
                ws = Workspace(mode, str(sample["sample_id"]), layout, sample)
                if mode == "turns":
                    ws.turn_dias = load_turns(layout, sample)
                else:
                    load_facts(layout, sample)
                out.append(ws)
        yield out


Scores = dict[str, float]


def recall(spaces: list[Workspace], search: Search) -> dict[str, Scores]:
    """Per mode: recall@k overall (``r@10``), per conversation (``r@10 conv-26``) and per
    category (``r@10 cat1``)."""
    lists: dict[str, dict[str, list[float]]] = {m: defaultdict(list) for m in MODES}
    for ws in spaces:
        for qa in ws.sample["qa"]:
            category = int(qa.get("category", 0))
            gold = {d for e in qa.get("evidence", []) for d in dia_ids(str(e))}
            if category not in (1, 2, 3, 4) or not gold:
                continue
            hits = search(ws.layout, str(qa["question"]), max(KS))
            for k in KS:
                found: set[str] = set()
                for hit in hits[:k]:
                    found |= ws.credited(hit)
                value = len(gold & found) / len(gold)
                for key in (f"r@{k}", f"r@{k} {ws.conversation}", f"r@{k} cat{category}"):
                    lists[ws.mode][key].append(value)
    return {m: {k: sum(v) / len(v) for k, v in sorted(d.items())} for m, d in lists.items()}


def lexical(layout: Layout, question: str, limit: int) -> list[Hit]:
    """search_memory ranking by words alone (never asks the daemon)."""
    return search_memory(layout, question, limit, semantic=False)


def hybrid(layout: Layout, question: str, limit: int) -> list[Hit]:
    """search_memory as the agent gets it: words, and meaning when the daemon answers."""
    return search_memory(layout, question, limit)


def plain_bm25(layout: Layout, question: str, limit: int) -> list[Hit]:
    """The baseline: the question's words (stop words dropped, Porter stems via the index's
    tokenizer) ORed into one FTS5 query per index, ordered by FTS5's own bm25()."""
    conn = schema.connect(layout.memory_db, "memory", readonly=True)
    try:
        tok = tokenizer(conn)
        data = clean_query(question)
        words = []
        for start, end, stem in spans(tok, data, query=True):
            word = data[start:end].decode("utf-8", "replace").lower()
            if word not in STOP_WORDS and stem not in STOP_WORDS:
                words.append('"' + word.replace('"', '""') + '"')
        if not words:
            return []
        match = " OR ".join(dict.fromkeys(words))
        found: list[tuple[float, Hit]] = []
        for fts, prefix in (("learnings_fts", "L"), ("turns_fts", "T")):
            for rowid, score in conn.execute(
                f"SELECT rowid, bm25({fts}) FROM {fts} WHERE {fts} MATCH ?"
                f" ORDER BY bm25({fts}) LIMIT ?",
                (match, limit),
            ):
                ref = None
                if prefix == "L":
                    row = conn.execute("SELECT ref FROM learnings WHERE id = ?", (rowid,))
                    ref = next(iter(row.fetchone() or ()), None)
                hit = Hit(f"{prefix}{rowid}", "", "", 0.0, "", "", ref, None, None)
                found.append((float(score), hit))
        found.sort(key=lambda pair: pair[0])
        return [hit for _, hit in found[:limit]]
    finally:
        conn.close()
