"""Invisible characters (bidi overrides, zero-width and other format characters) never reach a
curated md file from a curator reply, nor the boot context from any source."""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import apsw

from tests.conftest import drain, flush, make_worker, write_turns
from wsd.daemon.curation.judging.reply import parse_reply
from wsd.daemon.memory.boot import load_memory, visible
from wsd.daemon.standin.bridge import BridgeStandin, Reply
from wsd.schema.layout import Layout

RLO, ZWSP = "\u202e", "\u200b"
#: The characters issue 20 names, each on its own.
NAMED = (
    [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
    + [chr(c) for c in range(0x200B, 0x2010)]
    + ["\u2060", "\ufeff", "\u061c"]
)


def _invisible(text: str) -> list[str]:
    """The format (Cf) and control characters but tab and newline in ``text``, by name."""
    return [
        f"U+{ord(ch):04X}"
        for ch in text
        if unicodedata.category(ch) == "Cf"
        or (unicodedata.category(ch) == "Cc" and ch not in "\t\n")
    ]


def test_every_format_character_of_this_python_is_stripped() -> None:
    """visible() removes every Cf code point the running Python knows (the list in boot.py is
    not behind its Unicode version) and the named bidi/zero-width characters, and keeps
    ordinary text, accents, emoji, CJK and right-to-left letters."""
    cf = "".join(chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf")
    assert visible(cf) == ""
    assert all(visible(f"a{ch}b") == "ab" for ch in NAMED)
    ordinary = "- Prefers café ☕ 東京, שלום עליכם, مرحبا\t(tabs)"
    assert visible(ordinary) == ordinary


def test_a_curator_reply_cannot_write_bidi_or_zero_width_characters_into_user_md(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A reply whose line edits, full-file block, learning and action carry U+202E and U+200B
    (also inside the edit's address) writes user.md and memory.db without any of them."""
    worker = make_worker(layout, standin, batch_turns=1)
    standin.script(
        Reply.text(
            f"USER_MD_UPDATE:\n# User\n- Name: A{RLO}na\n- Lives in{ZWSP} Porto\n"
            f"FACT: The user{ZWSP} likes {RLO}green tea\n"
        ),
        Reply.text(
            f"user.md ~3: - Lives in {RLO}nobsiL{ZWSP}\n"
            f"user.md +{ZWSP}$: - Pays\u2066 with \u2069card{''.join(NAMED)}\n"
            f"ACTION: [high] Call{ZWSP} the {RLO}bank\n"
        ),
    )
    # The person's own words (issue 32), plain: only the reply carries the characters.
    write_turns(layout, 1, prompt="I'm Ana, I live in Porto and like green tea")
    flush(layout)
    drain(worker)
    write_turns(layout, 1, start=1, prompt="I live in nobsiL now; I pay with card; call the bank")
    flush(layout)
    drain(worker)
    text = Path(layout.md("user.md")).read_text(encoding="utf-8")
    assert text.splitlines() == ["# User", "- Name: Ana", "- Lives in nobsiL", "- Pays with card"]
    assert _invisible(text) == []
    conn = apsw.Connection(layout.memory_db)
    try:
        stored = [r[0] for r in conn.execute("SELECT content FROM learnings")]
        stored += [r[0] for r in conn.execute("SELECT content FROM pending_actions")]
    finally:
        conn.close()
    assert stored == ["The user likes green tea", "Call the bank"]


def test_the_reply_parser_strips_them_from_every_item_form() -> None:
    """Each item a reply can carry (edit, full-file block, learning, action, ACTION_DONE) comes
    out of the parser without format characters, and a zero-width space inside a keyword or
    an address no longer hides the item."""
    reply = (
        f"user.md ~1{ZWSP}: - x{RLO}y\n"
        f"FA{ZWSP}CT: a{RLO}b\n"
        f"ACTION: c\ufeffd\n"
        f"ACTION_DONE: {ZWSP}7\n"
        f"CONTEXT_MD_UPDATE:\n- e\u061cf\n"
    )
    parsed = parse_reply(reply, open_action_ids=[7])
    assert [e.text for e in parsed.edits["user.md"]] == ["- xy"]
    assert [item.content for item in parsed.learnings] == ["ab"]
    assert parsed.actions == [("cd", 2)] and parsed.closed_actions == [7]
    assert parsed.rewrites == {"context.md": ["- ef"]} and parsed.unknown_lines == []


def test_the_boot_context_has_none_even_from_a_hand_written_user_md(layout: Layout) -> None:
    """A person's own user.md (and a learning and an action stored before the fix) holding
    bidi overrides, isolates, zero-width characters, a BOM and tag letters gives a boot
    context without any, its words intact."""
    Path(layout.md("user.md")).write_text(
        f"\ufeff# User\n- Name: A{RLO}na{ZWSP}\n- Notes: \u2067hidden\u2069 \U000e0041\U000e0042"
        f"\n- Escape \x1b[31mred\x1b[0m\x07\n",
        encoding="utf-8",
    )
    conn = apsw.Connection(layout.memory_db)
    try:
        conn.execute(
            "INSERT INTO learnings (created_at, type, content, content_key) VALUES (?, ?, ?, ?)",
            (1_800_000_000.0, "fact", f"Likes {RLO}tea{ZWSP}", "likes tea"),
        )
        conn.execute(
            "INSERT INTO pending_actions (created_at, updated_at, content, priority, status,"
            " source, dedup_key) VALUES (?, ?, ?, 1, 'pending', 'curator', 'k')",
            (1_800_000_000.0, 1_800_000_000.0, f"Pay{ZWSP} the {RLO}bill"),
        )
    finally:
        conn.close()
    text = load_memory(layout, now=1_800_000_000.0)
    assert _invisible(text) == []
    for words in ("# User", "- Name: Ana", "- Notes: hidden", "Likes tea", "Pay the bill"):
        assert words in text
