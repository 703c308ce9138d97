"""search_memory, the turn index, wsd search / import / pending, and the memory MCP tools."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.conftest import drain, flush, import_lines, make_worker, scalar, venv_script, write_turns
from tests.conftest import query as rows_of
from wsd import schema
from wsd.daemon.memory.agent import run_resolve, run_search
from wsd.daemon.memory.search.core import Hit, format_hits, search_memory
from wsd.daemon.runtime.heartbeat import status_path
from wsd.daemon.standin.bridge import BridgeStandin, Reply
from wsd.daemon.store import Store, turn_text
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout

ROOT = Path(__file__).resolve().parent.parent


def wsd_command() -> list[str]:
    """The installed ``wsd`` command."""
    return [venv_script("wsd")]


def run_wsd(layout: Layout, *args: str | bytes, stdin: bytes | None = None) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WSD_")}
    env["WSD_WORKSPACE"] = layout.root
    return subprocess.run(
        [*wsd_command(), *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def turn(cap: Capture, session: str, prompt: str, answer: str, command: str = "") -> None:
    cap.handle({"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": prompt})
    if command:
        cap.handle(
            {
                "hook_event_name": "PostToolUse",
                "session_id": session,
                "tool_name": "Bash",
                "tool_input": {"command": command},
                "tool_response": "ok",
            }
        )
    cap.handle({"hook_event_name": "Stop", "session_id": session, "last_assistant_message": answer})


def curate(layout: Layout, standin: BridgeStandin) -> None:
    flush(layout)
    drain(make_worker(layout, standin, batch_turns=25))
    while Store(layout).archive.index_new_turns():
        pass


@pytest.fixture
def memory(layout: Layout, standin: BridgeStandin) -> Layout:
    """A workspace with curated learnings, indexed turns, an open action and imports."""
    cap = Capture(CaptureConfig(workspace=layout.root))
    turn(cap, "s1", "Please write the weekly report", "Saved report.md in the root folder.")
    turn(
        cap,
        "s1",
        "No, the weekly report goes in the reports folder, not the root folder.",
        "Understood, moved it.",
    )
    turn(cap, "s1", "I prefer tabs over spaces for indentation.", "Noted.")
    turn(cap, "s2", "Set up the data tools", "Installed pandas.", "pip install pandas")
    turn(cap, "s2", "Remind me to renew the domain name.", "I will remind you.")
    turn(cap, "s2", "What is the capital of Australia?", "Canberra, not Sydney.")
    cap.close()
    curate(layout, standin)
    report = import_lines(
        layout,
        [
            json.dumps(
                {
                    "type": "fact",
                    "content": "The VPN gateway lives at vpn.example.org",
                    "ref": "notes/network.md#vpn",
                    "created_at": "2024-01-05T10:00:00Z",
                }
            ),
            json.dumps(
                {
                    "type": "pattern",
                    "content": "Invoices are filed every Friday afternoon",
                    "ref": "crm:42",
                    "session_id": "old-crm",
                }
            ),
        ],
    )
    assert report.added.learnings == 2
    return layout


def test_natural_question_ranks_the_curated_answer_first(memory: Layout) -> None:
    """A natural question (not all words present anywhere) finds the correction first."""
    hits = search_memory(memory, "where should the weekly report be saved?")
    assert hits[0].type == "correction"
    assert "reports folder" in hits[0].snippet
    assert any(h.type == "turn" for h in hits)  # the turn that said it is found too


def test_hits_carry_id_type_date_snippet_and_source(memory: Layout) -> None:
    """Learnings name the turn they came from (or their import ref), turns their session/turn."""
    (vpn,) = [h for h in search_memory(memory, "VPN gateway") if h.id.startswith("L")]
    assert vpn.ref == "notes/network.md#vpn" and vpn.source == "notes/network.md#vpn"
    assert vpn.date == "2024-01-05 10:00" and vpn.type == "fact"
    pandas = search_memory(memory, "pandas", type="tool_install")[0]
    install = scalar(memory.memory_db, "SELECT id FROM turns WHERE tools LIKE '%pandas%'")
    assert pandas.source_turn == f"T{install}" and pandas.session_id == "s2"
    assert pandas.source.startswith(f"from turn T{install} (")
    assert pandas.turn == 1 and pandas.ref is None
    capital = search_memory(memory, "capital of Australia", type="turn")[0]
    assert capital.id.startswith("T") and capital.source == "session s2, turn 3"
    assert "Canberra" in capital.snippet
    text = format_hits([capital])
    assert text.startswith(f"[{capital.id}] turn · ") and "Canberra" in text


def test_type_and_since_filter(memory: Layout) -> None:
    """type keeps one kind; since drops older memories (epoch, ISO date or relative age)."""
    assert {h.type for h in search_memory(memory, "report folder", type="turn")} == {"turn"}
    assert search_memory(memory, "VPN gateway", since="2025-01-01") == []
    assert search_memory(memory, "VPN gateway", since=0)
    assert search_memory(memory, "invoices friday", since="1d")
    with pytest.raises(ValueError, match="unknown type"):
        search_memory(memory, "x", type="nonsense")
    with pytest.raises(ValueError, match="since"):
        search_memory(memory, "x", since="last tuesday")


def test_search_is_read_only(memory: Layout) -> None:
    """Searching never writes: the database bytes are unchanged, even with the file 0400."""
    conn = schema.connect(memory.memory_db, "memory")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = hashlib.sha256(Path(memory.memory_db).read_bytes()).hexdigest()
    os.chmod(memory.memory_db, 0o400)
    try:
        assert search_memory(memory, "weekly report")
    finally:
        os.chmod(memory.memory_db, 0o600)
    assert hashlib.sha256(Path(memory.memory_db).read_bytes()).hexdigest() == before


def test_missing_database_and_old_schema_give_fewer_results(tmp_path: Path) -> None:
    """No memory.db gives []; a memory.db from before the turn index still finds learnings."""
    assert search_memory(Layout(str(tmp_path)), "anything") == []
    path = str(tmp_path / "old.db")
    conn = schema.connect(path, "memory")
    with open(schema.migrations("memory")[0].path, encoding="utf-8") as fh:
        conn.execute(fh.read())
    conn.execute(
        "INSERT INTO learnings (created_at, type, content, content_key)"
        " VALUES (1, 'fact', 'the printer is on floor two', 'k')"
    )
    conn.close()
    (hit,) = search_memory(path, "which floor is the printer on")
    assert hit.id == "L1"


def test_turn_index_skips_memory_tools_and_is_incremental(layout: Layout) -> None:
    """Turns are copied once, in order; memory tool calls (MCP or `wsd search` in a shell)
    are left out of the copy."""
    cap = Capture(CaptureConfig(workspace=layout.root))
    cap.handle({"hook_event_name": "UserPromptSubmit", "session_id": "a", "prompt": "find it"})
    cap.handle(
        {
            "hook_event_name": "PostToolUse",
            "session_id": "a",
            "tool_name": "mcp__memory__search_memory",
            "tool_input": {"query": "secret plan"},
            "tool_response": "[L1] the secret plan",
        }
    )
    cap.handle({"hook_event_name": "Stop", "session_id": "a", "last_assistant_message": "done"})
    cap.close()
    store = Store(layout)
    assert store.archive.index_new_turns() == 1 and store.archive.index_new_turns() == 0
    assert search_memory(layout, "secret plan") == []
    shell = [
        {
            "name": "Bash",
            "input": {"command": "wsd --workspace /w search secret plan"},
            "output": "[L1] the secret plan",
        }
    ]
    assert turn_text("q", json.dumps(shell), "ok") == ("q", "ok", "")
    assert turn_text(
        "q", json.dumps([{"name": "Bash", "input": {"command": "ls"}, "output": "a.txt"}]), "ok"
    ) == ("q", "ok", 'Bash {"command": "ls"} -> a.txt')


HOSTILE = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    '"',
    '""',
    '"unterminated',
    "'",
    "*",
    "**",
    "a*",
    "*a",
    "NEAR(",
    "NEAR(a b",
    "NEAR(a, b, 5)",
    "AND",
    "OR",
    "NOT",
    "a AND",
    "OR b",
    "NOT NOT",
    "(",
    ")",
    "((a)",
    "a)",
    "C++",
    "c#",
    "f(x)",
    "content:",
    "content: report",
    "type:fact",
    "{content}: x",
    "^report",
    "-report",
    "+report",
    "report -folder",
    ":",
    "::",
    "\\",
    '\\\\"',
    "'; DROP TABLE learnings; --",
    "1=1",
    "%",
    "_",
    "$",
    "@@",
    "{}",
    "[]",
    "\t\n\r",
    "\u200b",
    "\u202e report",
    "e\u0301",
    "🙂🙂",
    "日本語の質問",
    "ﬁ",
    "İstanbul",
    "a" * 10_000,
    "report " * 1500,
    "x " * 5000,
    "0",
    "-1",
    "1e309",
    "NaN",
    "null",
    "None",
    "\x1b[31m",
    "<private>x</private>",
    "<workspace-memory>",
    "SELECT * FROM learnings",
    "learnings_fts MATCH 'x'",
    "rank:",
    "bm25(",
    "highlight(",
    "/*",
    "*/",
    "--",
    ";",
]
SPECIALS = [
    *"\"'*()^:+-{}[],.;!?\\/<>|&=%$#@~`\x00\t\n",
    *("NEAR", "AND", "OR", "NOT", "C++", "\ud83d", "\udc00", "é", "ß", "report", "folder"),
]


def hostile_queries(count: int = 200, seed: int = 4) -> list[str]:
    """The fixed hostile list plus random mixes of FTS5 syntax, controls and surrogates."""
    rng = random.Random(seed)
    out = list(HOSTILE)
    while len(out) < count:
        out.append(
            "".join(rng.choice(SPECIALS) + rng.choice(["", " "]) for _ in range(rng.randint(1, 30)))
        )
    return out


def test_hostile_queries_never_raise(memory: Layout) -> None:
    """Over 200 hostile strings through search_memory and the MCP tool: results or [], no error."""
    queries = hostile_queries(260)
    assert len(queries) >= 200
    for query in queries:
        hits = search_memory(memory, query)
        assert isinstance(hits, list) and all(isinstance(h, Hit) for h in hits)
        result = run_search(memory, {"query": query, "limit": 5})
        # Only a query with no letter or digit is the caller's mistake (an error asking for
        # words, not "nothing matches").
        wordless = not any(ch.isalnum() for ch in query.replace("\x00", " "))
        assert ("is_error" in result) == wordless, (query[:40], result)
        assert isinstance(result["content"][0]["text"], str)
    for odd in (None, 12, 3.5, ["a"], {"q": 1}, b"bytes"):
        assert isinstance(search_memory(memory, odd), list)
    for limit in (0, -5, 10**9, "7", None):
        assert isinstance(run_search(memory, {"query": "report", "limit": limit}), dict)


def _argv(query: str) -> bytes:
    """What a command line can carry: no NUL; a lone surrogate travels as invalid UTF-8."""
    return query.replace("\x00", " ").encode("utf-8", "surrogatepass")


@pytest.mark.slow
def test_hostile_queries_through_wsd_search(memory: Layout) -> None:
    """60 hostile strings through `wsd search` (subprocess): exit 0 and valid JSON; one with
    no words at all is a usage line, exit 2 (not "nothing matches"). The command line's own
    path (argv, encodings, exit codes); the search itself meets 260 of them in process
    (test_hostile_queries_never_raise): 210 processes here took a twelfth of make test."""
    queries = hostile_queries(60, seed=9)
    queries += [b"\xff\xfe invalid utf-8".decode("utf-8", "surrogateescape"), "", " \t "]

    def one(query: str) -> tuple[str, Any]:
        return query, run_wsd(memory, "search", "--json", "--limit", "3", "--", _argv(query))

    with ThreadPoolExecutor(max_workers=8) as pool:
        for query, proc in pool.map(one, queries):
            # What reached the command line: no letter or digit is a usage line.
            if not any(ch.isalnum() for ch in _argv(query).decode("utf-8", "replace")):
                assert proc.returncode == 2 and proc.stdout == b""
                assert proc.stderr.startswith(b"wsd search: give a question or keywords")
                continue
            assert proc.returncode == 0, (query[:40], proc.stderr[-500:])
            assert isinstance(json.loads(proc.stdout), list)


def test_wsd_search_json_carries_ref(memory: Layout) -> None:
    """`wsd search --json` gives each hit's id, type, date, snippet, source and import ref."""
    proc = run_wsd(memory, "search", "VPN", "gateway", "--json")
    assert proc.returncode == 0, proc.stderr
    first = json.loads(proc.stdout)[0]
    assert first["ref"] == "notes/network.md#vpn" and first["id"].startswith("L")
    assert {"id", "type", "date", "snippet", "source", "ref"} <= set(first)
    text = run_wsd(memory, "search", "weekly", "report", "--limit", "1")
    assert text.returncode == 0 and text.stdout.decode().count("\n") == 2


def test_a_bad_import_line_imports_nothing_and_good_lines_import_whole(
    layout: Layout, tmp_path: Path
) -> None:
    """A file with one bad line anywhere imports nothing, and says which line and why (exit
    2); the same good lines alone are imported (an exact duplicate skipped)."""
    good = [
        json.dumps({"type": "fact", "content": "Alpha is the first project", "ref": "r1"}),
        json.dumps(
            {
                "type": "preference",
                "content": "Use metric units",
                "confidence": 0.8,
                "created_at": 1700000000,
                "session_id": "legacy",
            }
        ),
        json.dumps({"type": "fact", "content": "Alpha is the first project."}),  # duplicate
    ]
    bad = [
        ("{not json", "not valid JSON"),
        (json.dumps({"type": "opinion", "content": "x"}), "type must be one of"),
        (json.dumps({"type": "fact"}), "content must be"),
        (json.dumps(["a", "list"]), "expected a JSON object"),
        (json.dumps({"type": "fact", "content": "Beta", "created_at": "May"}), "is not a date"),
        (json.dumps({"type": "fact", "content": "Gamma", "confidence": 7}), "confidence"),
    ]
    path = tmp_path / "in.jsonl"
    for line, why in bad:
        path.write_text("\n".join([good[0], "", line, *good[1:]]) + "\n")
        proc = run_wsd(layout, "import", str(path))
        assert proc.returncode == 2, line
        assert b"in.jsonl:3: " in proc.stderr and why.encode() in proc.stderr, proc.stderr
        assert b"nothing was imported" in proc.stderr
        assert Store(layout).learnings.learnings() == []
    path.write_bytes("\n".join(good).encode() + b"\n\xff\xfe\n")
    assert b"in.jsonl:4: not valid UTF-8" in run_wsd(layout, "import", str(path)).stderr
    path.write_text("\n".join(good) + "\n")
    proc = run_wsd(layout, "import", str(path))
    assert proc.returncode == 0, proc.stderr
    assert b"imported 2 learning(s) from wsd" in proc.stdout
    assert b"1 duplicate(s) skipped" in proc.stdout
    rows = (
        apsw.Connection(layout.memory_db)
        .execute(
            "SELECT type, content, ref, session_id, confidence, created_at FROM learnings"
            " ORDER BY id"
        )
        .fetchall()
    )
    assert rows[0][:3] == ("fact", "Alpha is the first project", "r1")
    assert rows[1] == ("preference", "Use metric units", None, "legacy", 0.8, 1700000000.0)


def test_import_counts_the_unknown_turns_it_does_not_list(layout: Layout, tmp_path: Path) -> None:
    """`wsd import` lists ten of the turns it could not link and says how many more (the list
    was cut at ten silently, as if those were all)."""
    path = tmp_path / "in.jsonl"
    turns = [f"T{900_000 + i}" for i in range(15)]
    path.write_text(json.dumps({"type": "fact", "content": "Linked to nothing", "turns": turns}))
    out = run_wsd(layout, "import", str(path))
    listed = ", ".join(turns[:10])
    assert out.returncode == 0, out.stderr
    assert f"turns not in memory, not linked: {listed} and 5 more\n" in out.stderr.decode()


def test_pending_list_complete_dismiss(memory: Layout) -> None:
    """`wsd pending` lists open actions and closes them; a closed or unknown id is refused."""
    listed = json.loads(run_wsd(memory, "pending", "--json").stdout)
    assert [a["content"] for a in listed] == ["Renew the domain name"]
    action = listed[0]["id"]
    proc = run_wsd(memory, "pending", "complete", str(action))
    assert proc.returncode == 0 and f"#{action} marked completed" in proc.stdout.decode()
    assert run_wsd(memory, "pending", "dismiss", str(action)).returncode == 1
    assert run_wsd(memory, "pending").stdout.decode().strip() == "No pending actions."
    closed = json.loads(run_wsd(memory, "pending", "list", "--all", "--json").stdout)
    assert closed[0]["status"] == "completed"
    assert run_wsd(memory, "pending", "complete").returncode == 2


def test_resolve_action_tool_and_curator_action_done(
    memory: Layout, standin: BridgeStandin
) -> None:
    """The agent's tool closes an action; the curator's ACTION_DONE line closes one too."""
    store = Store(memory)
    ((first, _, _),) = store.actions.open_actions()
    bad = run_resolve(memory, {"id": first, "status": "finished"})
    assert bad.get("is_error") and "status must be one of" in bad["content"][0]["text"]
    done = run_resolve(memory, {"id": f"#{first}", "status": "dismissed"})
    assert done["content"][0]["text"] == f"Action #{first} marked dismissed."
    assert run_resolve(memory, {"id": first, "status": "completed"}).get("is_error")
    # A new action, then a turn the curator judges to have handled it.
    cap = Capture(CaptureConfig(workspace=memory.root))
    turn(cap, "s3", "Remind me to water the plants.", "Sure.")
    cap.close()
    curate(memory, standin)
    ((second, _, _),) = store.actions.open_actions()
    cap = Capture(CaptureConfig(workspace=memory.root))
    turn(cap, "s3", "I watered the plants.", "Great.")
    cap.close()
    standin.script(Reply.text(f"ACTION_DONE: {second}"))
    curate(memory, standin)
    assert store.actions.open_actions() == []
    assert not store.actions.set_action_status(second, "completed", time.time())


def test_search_tool_reports_bad_arguments(memory: Layout) -> None:
    """Bad type/since become a readable is_error result, never an exception."""
    result = run_search(memory, {"query": "report", "type": "bogus"})
    assert result["is_error"] and "unknown type" in result["content"][0]["text"]
    result = run_search(memory, {"query": "report", "since": "whenever"})
    assert result["is_error"]
    assert "reports folder" in asyncio.run(_via_thread(memory))


async def _via_thread(layout: Layout) -> str:
    result = await asyncio.to_thread(run_search, layout, {"query": "weekly report folder"})
    return str(result["content"][0]["text"])


# -- each kept ranking heuristic, pinned by a case it decides ------------------------------------

#: Notes that share no content word with the questions below (the archive's background).
FILLER = [f"note {i}: the team met on day {i} and the plan was as it always is" for i in range(30)]


def _notes(layout: Layout, notes: list[str], turns: tuple[tuple[str, str], ...] = ()) -> None:
    """Import ``notes`` as facts (no session: no neighbours) and capture ``turns``."""
    import_lines(layout, [json.dumps({"type": "fact", "content": c}) for c in FILLER + notes])
    cap = Capture(CaptureConfig(workspace=layout.root))
    for session, prompt in turns:
        cap.handle({"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": prompt})
        cap.handle({"hook_event_name": "Stop", "session_id": session, "last_assistant_message": ""})
    cap.close()
    while Store(layout).archive.index_new_turns():
        pass


def test_function_words_never_make_a_match(layout: Layout) -> None:
    """Stop list: a note sharing only "what is the" with the question is not a hit."""
    _notes(layout, ["the wifi password is hunter2", "what is it, what was it, what will it be"])
    hits = search_memory(layout, "what is the wifi password?", semantic=False)
    assert hits and all("wifi" in h.snippet for h in hits)


def test_a_note_covering_more_of_the_question_beats_one_word_repeated(layout: Layout) -> None:
    """Coordination: covering "renewal" and "appointment" beats repeating the rarer "passport"."""
    _notes(
        layout,
        [
            "passport passport passport passport",
            "passport photos",
            "renewal appointment booked at the town hall for next week with the clerk",
            "renewal due",
            "renewal of the lease",
            "renewal of the gym",
            "appointment with the bank",
            "appointment at noon",
            "dentist appointment",
        ],
    )
    hits = search_memory(layout, "passport renewal appointment", semantic=False)
    assert "town hall" in hits[0].snippet


def test_a_word_finds_its_derivations(layout: Layout) -> None:
    """Prefix variants: "marriage" finds "married" (Porter stems them apart)."""
    _notes(layout, ["Anna and Ben got married in June 2019", "Anna bought a new bike"])
    hits = search_memory(layout, "Anna marriage", semantic=False)
    assert "married" in hits[0].snippet


def test_feedback_words_rank_but_never_make_a_hit_without_a_word_asked(layout: Layout) -> None:
    """Relevance feedback (issue 45): the note sharing only the best hit's words (tram 28,
    pastel de nata) is no hit for "lisbon"; asked for one of those words, it is."""
    _notes(
        layout,
        [
            "Trip to Lisbon with Anna: tram 28 and pastel de nata",
            "Anna loved the tram 28 ride and the pastel de nata",
        ],
    )
    hits = search_memory(layout, "lisbon", semantic=False)
    assert hits and not any("loved" in h.snippet for h in hits), hits
    assert any("loved" in h.snippet for h in search_memory(layout, "lisbon tram", semantic=False))


def test_the_next_turn_answers_the_question_turn(layout: Layout) -> None:
    """Neighbour lending: the turn after a matching one (its answer) is found too."""
    _notes(
        layout,
        [],
        turns=(
            ("s1", "Which cafe on Elm street do you recommend?"),
            ("s1", "Blue Door, they roast their own beans."),
            ("s2", "Unrelated chat about trains."),
        ),
    )
    hits = search_memory(layout, "cafe Elm street", semantic=False)
    assert any("Blue Door" in h.snippet for h in hits)


# -- superseded learnings, and the floor ----------------------------------------------------------


def _supersede(layout: Layout, old: int, new: int) -> None:
    conn = schema.connect(layout.memory_db, "memory")
    try:
        conn.execute(
            "UPDATE learnings SET superseded_by = ?, superseded_at = 1 WHERE id = ?", (new, old)
        )
    finally:
        conn.close()


def test_a_superseded_learning_ranks_below_its_successor_and_says_so(layout: Layout) -> None:
    """A replaced learning comes right after its successor (brought in when the query missed
    it), flagged in the hit, in the agent's text and in `wsd search --json`."""
    _notes(
        layout,
        [
            "Monthly reports go to the shared drive, folder reports/monthly",
            "Reports now live in the NAS archive",
        ],
    )
    old, new = len(FILLER) + 1, len(FILLER) + 2
    query = "where do the monthly reports go? shared drive"
    assert search_memory(layout, query, semantic=False)[0].id == f"L{old}"
    _supersede(layout, old, new)
    hits = search_memory(layout, query, semantic=False)
    assert [h.id for h in hits[:2]] == [f"L{new}", f"L{old}"]
    assert hits[1].superseded_by == f"L{new}" and hits[0].superseded_by is None
    assert f"[L{old}] fact · " in format_hits(hits) and f"superseded by L{new}" in format_hits(hits)
    out = json.loads(run_wsd(layout, "search", "--json", query).stdout)
    assert [(h["id"], h["superseded_by"]) for h in out[:2]] == [
        (f"L{new}", None),
        (f"L{old}", f"L{new}"),
    ]


def test_a_query_nothing_matches_gets_one_line(memory: Layout) -> None:
    """No hit clears the floor: the tool says so in one line instead of listing weak hits."""
    result = run_search(memory, {"query": "quantum chromodynamics lecture"})
    text = result["content"][0]["text"]
    assert "is_error" not in result and "\n" not in text and text.startswith("Nothing in memory")


def _lyon(layout: Layout) -> None:
    """Lyon said plainly in three short turns, and twice deep in what a tool read in a long
    turn of another session, whose turns before and after say nothing of it."""
    cap = Capture(CaptureConfig(workspace=layout.root))
    turn(cap, "trip", "Book the train to Lyon for Monday", "Booked: Paris to Lyon, Monday 8:04.")
    turn(cap, "trip", "And a hotel in Lyon near the station", "Booked the Hotel Part-Dieu, Lyon.")
    turn(cap, "trip", "What is the weather in Lyon on Monday?", "Lyon on Monday: 14 degrees.")
    turn(cap, "desk", "Tidy up the documents folder", "Which folder first?")
    cap.handle({"hook_event_name": "UserPromptSubmit", "session_id": "desk", "prompt": "All"})
    for k in range(12):
        text = f"file {k}: " + " ".join(f"line{j} of the scanned page {k}" for j in range(40))
        cap.handle(
            {
                "hook_event_name": "PostToolUse",
                "session_id": "desk",
                "tool_name": "Read",
                "tool_input": {"file_path": f"/w/documents/scan{k}.txt"},
                "tool_response": ("client address: 4 rue Mercière, Lyon. " if k in (3, 7) else "")
                + text,
            }
        )
    cap.handle({"hook_event_name": "Stop", "session_id": "desk", "last_assistant_message": "Done."})
    turn(cap, "desk", "Now archive last year's receipts", "Archived 31 receipts.")
    cap.close()
    while Store(layout).archive.index_new_turns():
        pass


def test_a_neighbour_of_a_weak_match_does_not_pad_the_hits(layout: Layout) -> None:
    """`wsd search Lyon` lists only turns that say Lyon: the turns before and after a weak
    match (Lyon deep in a long turn) were shown at 0.003 on the 30 % of its score they are
    lent, above the floor of a word match (0.002) though they hold no word of the query."""
    _lyon(layout)
    hits = json.loads(run_wsd(layout, "search", "--json", "Lyon").stdout)
    texts = {
        f"T{tid}": text
        for tid, text in rows_of(
            layout.memory_db, "SELECT id, prompt || response || tools FROM turns"
        )
    }
    assert len(hits) == 4 and all("Lyon" in texts[h["id"]] for h in hits), hits


def test_a_snippet_shows_the_word_that_matched(layout: Layout) -> None:
    """The snippet of a long turn shows the query word it holds: it opened three words before
    the stretch richest in query words and cut it at its width, so a stretch ending in the
    word lost it, and a true match read as an unrelated turn."""
    _lyon(layout)
    hits = json.loads(run_wsd(layout, "search", "--json", "Lyon").stdout)
    (desk,) = [h for h in hits if (h["session_id"], h["turn"]) == ("desk", 2)]
    assert "Lyon" in desk["snippet"] and len(desk["snippet"]) <= 242, desk


def test_hits_name_a_session_whole_or_say_it_was_cut(layout: Layout) -> None:
    """`wsd search` shows a session id whole when it is short (``sess-e2e4-a`` was shown as
    ``sess-e2e``, as if that were the id); a cut one ends in "…" (a UUID: its first 8
    characters); the JSON keeps the whole id."""
    sessions = {
        "3f2b9c1e-8d4a-4c7e-9b1f-0a2d3e4f5a6b": "session 3f2b9c1e…, turn 1",
        "sess-e2e4-a": "session sess-e2e4-a, turn 1",
        "nightly-import-2026-04-03-run-17": "session nightly-import-2026-04-…, turn 1",
    }
    for session in sessions:
        write_turns(layout, 1, session=session, prompt="the quarterly zeppelin maintenance plan")
    while Store(layout).archive.index_new_turns():
        pass
    out = run_wsd(layout, "search", "zeppelin maintenance")
    headers = [line for line in out.stdout.decode().splitlines() if line.startswith("[T")]
    assert sorted(h.split(" · ")[-1] for h in headers) == sorted(sessions.values()), headers
    hits = json.loads(run_wsd(layout, "search", "--json", "zeppelin maintenance").stdout)
    assert sorted(h["session_id"] for h in hits) == sorted(sessions)


def test_a_learning_says_where_it_came_from(layout: Layout, standin: BridgeStandin) -> None:
    """Found by a new user: a learning imported with no ``ref`` and no session was shown as
    "curated". Imported ones say ``imported`` (or their ref); curated ones the turn they came
    from."""
    store = Store(layout)
    import_lines(
        store.layout,
        [
            json.dumps({"type": "fact", "content": "The boiler is serviced in May."}),
            json.dumps(
                {"type": "fact", "content": "The boiler manual is on the shelf.", "ref": "n1"}
            ),
        ],
    )
    standin.responder = lambda _body: Reply.text("FACT: The boiler pressure is 1.5 bar.")
    write_turns(layout, 1, prompt="Task {i}: check the boiler pressure")
    flush(layout)
    drain(make_worker(layout, standin, batch_turns=1))
    sources = {h.snippet.strip("*"): h.source for h in search_memory(layout, "boiler")}
    by_text = {text.split(".")[0].replace("*", ""): src for text, src in sources.items()}
    assert by_text["The boiler is serviced in May"] == "imported", sources
    assert by_text["The boiler manual is on the shelf"] == "n1", sources
    assert by_text["The boiler pressure is 1"].startswith("from turn T1 ("), sources


def test_the_index_folds_letters_as_the_code_does() -> None:
    """The views of memory migration 015 fold with wsd.schema.stems.fold_sql, and SQLite's
    fold of every letter of FOLD is Python's (so an index made by either agrees)."""
    import apsw

    from wsd.schema.stems import FOLD, fold, fold_sql

    sql = (Path(__file__).parent.parent / "schema/sql/memory/015_folding.sql").read_text()
    for column in ("content", "prompt", "response", "tools", "new.content", "old.tools"):
        assert fold_sql(column) in sql, column
    text = "Tromsø Łódź Straße Encyclopædia Þór " + "".join(FOLD)
    conn = apsw.Connection(":memory:")
    (got,) = conn.execute(f"SELECT {fold_sql('?')}", (text,)).fetchone()
    assert got == fold(text) and fold("".join(FOLD)).isascii()


def test_a_hit_holds_a_word_of_the_question_or_neighbours_one_never_an_erased_turn(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Semantic off (issue 45): `passport` finds the turn saying it and at most its session
    neighbours, never a turn only the best hit's other words (feedback) brought in; a turn
    erased whole (`[forgotten]` left) is no hit, not even for the word "forgotten"."""
    cap = Capture(CaptureConfig(workspace=layout.root))
    turn(cap, "s1", "Book the train to Lyon for Friday morning", "Booked the 8:04 to Lyon.")
    turn(cap, "s1", "My passport is in the blue drawer of the Lyon flat", "Noted.")
    turn(cap, "s1", "Thanks, and the hotel in Lyon?", "The Hotel Bellecour, two nights.")
    turn(cap, "s2", "The drawer of the desk sticks", "I will note the drawer.")
    turn(cap, "s3", "Remember the wifi code ZX-91 for the cabin", "Saved the wifi code.")
    cap.close()
    curate(layout, standin)
    beat = Path(status_path(layout))  # the in-process worker is gone: forget need not pause it
    beat.write_text(json.dumps({**json.loads(beat.read_text()), "state": "stopped"}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WSD_")}
    subprocess.run(
        [*wsd_command(), "forget", "T5", "--yes"],
        env={**env, "WSD_WORKSPACE": layout.root},
        capture_output=True,
        check=True,
        timeout=60,
    )
    hits = search_memory(layout, "passport")
    (held,) = [h for h in hits if "passport" in h.snippet.lower()]
    assert (held.session_id, held.turn) == ("s1", 2), hits
    # Besides it, only its session neighbours (the next turn often answers it), never the
    # turn sharing its other word ("drawer", through feedback) in another session.
    assert {(h.session_id, h.turn) for h in hits} <= {("s1", 1), ("s1", 2), ("s1", 3)}, hits
    for query in ("forgotten", "wifi code cabin"):
        found = search_memory(layout, query)
        assert not any("[forgotten]" in h.snippet and "wifi" not in h.snippet for h in found)
        assert all(h.id != "T5" for h in found), found


def test_an_empty_query_is_the_callers_mistake_on_every_path(layout: Layout) -> None:
    """`search_memory {"query": ""}` (or only spaces) is an error asking for words, as
    `wsd search ''` is, never "Nothing in memory matches" (issue 45)."""
    for query in ("", "   "):
        result = run_search(layout, {"query": query})
        assert result.get("is_error") is True, result
        assert "query is empty: give a few specific words" in json.dumps(result)
    cli = run_wsd(layout, "search", "")
    assert cli.returncode == 2 and b"give a question or keywords" in cli.stderr
