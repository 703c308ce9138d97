"""Reading curator replies: the edit syntax and its usual slips, and untrusted replies that
can never reach a file outside the four curated ones."""

from __future__ import annotations

import random

from wsd.daemon.curation.judging.edits import Edit
from wsd.daemon.curation.judging.guards import Caps, review
from wsd.daemon.curation.judging.reply import parse_reply
from wsd.schema.layout import CURATED_FILES


def test_edit_lines_are_read_through_the_usual_model_slips() -> None:
    """Bullets, bold, words for the symbols, 'line'/'L'/'#' before numbers, ranges, trailing
    spaces, an echoed 'N|' prefix and a code fence all read as the edit meant; a line for a
    file that is not curated, or a replace without text, is reported, not guessed."""
    reply = "\n".join(
        [
            "```",
            "user.md +3: - Prefers metric units   ",
            "- **user.md** ~5: - Lives in Lisbon",
            "user.md: REPLACE line 6: 6| - Has a dog",
            "context.md DELETE L2",
            "tools.md -4..6",
            "tools.md ADD AFTER #0: # Tools",
            "files.md +$: - reports/ holds the monthly reports",
            "files.md +end - no colon either",
            "soul.md +1: I am evil now",
            "user.md ~9",
            "```",
        ]
    )
    parsed = parse_reply(reply)
    assert parsed.edits == {
        "user.md": [
            Edit("add", 3, "- Prefers metric units"),
            Edit("replace", 5, "- Lives in Lisbon"),
            Edit("replace", 6, "- Has a dog"),
        ],
        "context.md": [Edit("delete", 2)],
        "tools.md": [
            Edit("delete", 4),
            Edit("delete", 5),
            Edit("delete", 6),
            Edit("add", 0, "# Tools"),
        ],
        "files.md": [
            Edit("add", None, "- reports/ holds the monthly reports"),
            Edit("add", None, "- no colon either"),
        ],
    }
    assert parsed.unknown_lines == ["soul.md +1: I am evil now", "user.md ~9"]


def test_learning_references_and_action_priorities() -> None:
    """[turn N] and [turns N, M] (only turns of the batch) and [replaces ID] in either order
    or as a tag, action priorities, and ACTION_DONE only for an open action."""
    parsed = parse_reply(
        "FACT: Office in Lisbon [replaces 12] [turn 3]\n"
        "PREFERENCE [replaces #4]: Tea, not coffee\n"
        "CORRECTION: Dates are DD/MM/YYYY [turn 99]\n"
        "PATTERN: Invoices on Mondays [turns 5, 99, 3 and 5]\n"
        "ACTION [urgent]: Renew the domain\n"
        "ACTION: (high) Call Paul\n"
        "ACTION_DONE: #7\nACTION_DONE: 8",
        turn_ids=[3, 5],
        open_action_ids=[7],
    )
    assert [(x.kind, x.content, x.cited, x.replaces) for x in parsed.learnings] == [
        ("fact", "Office in Lisbon", (3,), 12),
        ("preference", "Tea, not coffee", (), 4),
        ("correction", "Dates are DD/MM/YYYY", (), None),
        ("pattern", "Invoices on Mondays", (5, 3), None),
    ]
    assert parsed.actions == [("Renew the domain", 0), ("Call Paul", 1)]
    assert parsed.closed_actions == [7] and parsed.unknown_lines == ["ACTION_DONE: 8"]


def test_a_bare_priority_word_is_read_as_the_priority() -> None:
    """Found by a new user: ``ACTION: high Water the plants`` was stored as "[normal] high
    Water the plants". A bare priority word (as the format writes it) is the priority; a
    capitalised word starting the text ("High school reunion") is the action's text."""
    parsed = parse_reply(
        "ACTION: high Water the plants\n"
        "ACTION: urgent: Renew the passport\n"
        "ACTION: P0 - Pay the rent\n"
        "ACTION: High school reunion RSVP by Friday\n"
        "ACTION: normal",
        turn_ids=[],
        open_action_ids=[],
    )
    assert parsed.actions == [
        ("Water the plants", 1),
        ("Renew the passport", 0),
        ("Pay the rent", 0),
        ("High school reunion RSVP by Friday", 2),
        ("normal", 2),
    ]


def test_property_no_reply_reaches_a_file_outside_the_four() -> None:
    """Seeded random replies mixing valid and hostile lines (other file names, paths, update
    headers for deploy files, junk): what the guards let through names curated files only,
    stays within each file's limits, and never holds more lines than allowed."""
    rng = random.Random(7)
    names = [*CURATED_FILES, "soul.md", "os.md", "../../etc/passwd", "x.md", "USER.md", "user"]
    heads = ["USER_MD_UPDATE:", "SOUL_MD_UPDATE:", "OS_MD_UPDATE:", "FILES_MD_UPDATE:", "FACT:"]
    base = {name: "# T\n- a\n- b\n" for name in CURATED_FILES}
    caps = Caps()
    for _ in range(2000):
        lines = []
        for _ in range(rng.randrange(40)):
            kind = rng.randrange(4)
            if kind == 0:
                op = rng.choice(["+", "~", "-", "+$", "add after ", "DELETE "])
                lines.append(
                    f"{rng.choice(names)} {op}{rng.randrange(-2, 9)}: {'x' * rng.randrange(600)}"
                )
            elif kind == 1:
                lines.append(rng.choice(heads))
            else:
                lines.append(rng.choice(["- line", "junk ✓", "", "```", "NONE", "../soul.md"]))
        parsed = parse_reply("\n".join(lines))
        out = review(parsed, base=base, current=base, turns=1, truncated=False, caps=caps)
        assert set(out.md_updates) <= set(CURATED_FILES)
        for name, text in out.md_updates.items():
            limits = caps.limits(name)
            assert len(text.splitlines()) <= limits.lines and len(text) <= limits.chars
