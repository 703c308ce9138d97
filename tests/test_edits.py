"""The md file logic: line-addressed edits, rewrites turned into edits, and their guards."""

from __future__ import annotations

import random
from collections import Counter

from wsd.daemon.memory.edits import MAX_LINE_CHARS, Edit, Limits, apply, edits_from_rewrite

LIMITS = Limits(lines=200, chars=12_000)
BASE = ["# User", "- Name: Ana", "- Lives in Porto", "- Prefers tabs", "- Has a cat"]


def test_add_replace_delete_on_the_file_as_sent() -> None:
    """Adds land after their line (0 = top, None = end, several at one place in order),
    a replacement swaps its line, a deletion removes its line."""
    edits = [
        Edit("add", 0, "<!-- top -->"),
        Edit("replace", 3, "- Lives in Lisbon"),
        Edit("delete", 5),
        Edit("add", 1, "- Pronouns: she/her"),
        Edit("add", 1, "- Age: 41"),
        Edit("add", None, "- Likes green tea"),
    ]
    out = apply(BASE, BASE, edits, LIMITS)
    assert out.lines == [
        "<!-- top -->",
        "# User",
        "- Pronouns: she/her",
        "- Age: 41",
        "- Name: Ana",
        "- Lives in Lisbon",
        "- Prefers tabs",
        "- Likes green tea",
    ]
    assert out.refused == [] and out.deleted == 1


def test_edits_against_a_file_edited_by_hand_meanwhile_follow_their_lines() -> None:
    """A person inserted two lines at the top and changed line 4 while the call was in
    flight: edits to unchanged lines land on those lines (not on whatever has the number
    now); an edit to the changed line is refused."""
    current = ["# User", "My notes:", "- My daughter is called Mia", *BASE[1:3], "- Prefers spaces"]
    current += BASE[4:]
    edits = [
        Edit("replace", 3, "- Lives in Lisbon"),
        Edit("delete", 4),
        Edit("add", 2, "- Works as a nurse"),
        Edit("replace", 5, "- Has two cats"),
    ]
    out = apply(BASE, current, edits, LIMITS)
    assert out.lines == [
        "# User",
        "My notes:",
        "- My daughter is called Mia",
        "- Name: Ana",
        "- Works as a nurse",
        "- Lives in Lisbon",
        "- Prefers spaces",
        "- Has two cats",
    ]
    assert [(e.op, e.line) for e, _why in out.refused] == [("delete", 4)]
    assert "changed since the request" in out.refused[0][1]


def test_a_two_line_rewrite_of_a_twenty_line_file_keeps_fifteen() -> None:
    """A careless full-file reply of 2 lines for a 20-line file: 2 lines replaced, 5 deleted
    (a quarter), the other 13 kept; what was refused says why."""
    base = [f"- fact {i}" for i in range(20)]
    out = apply(base, base, edits_from_rewrite(base, ["# User", "- new"]), LIMITS)
    assert len(out.lines) == 15 and out.lines[:2] == ["# User", "- new"]
    assert out.deleted == 5
    assert len(out.refused) == 13 and all("loss limit" in why for _e, why in out.refused)


def test_rewrite_to_edits_round_trips() -> None:
    """Without guards in the way, a rewrite turned into edits gives exactly the rewrite."""
    rng = random.Random(5)
    for _ in range(200):
        base = [f"l{rng.randrange(8)}" for _ in range(rng.randrange(12))]
        new = [f"l{rng.randrange(8)}" for _ in range(rng.randrange(12))]
        out = apply(base, base, edits_from_rewrite(base, new), Limits(99, 9999, max_loss=1.0))
        assert out.lines == new and out.refused == []


def test_line_limit_byte_budget_and_long_lines_are_refused_last_first() -> None:
    """Adds past the line limit or the byte budget are refused (the last ones), and so is a
    line longer than MAX_LINE_CHARS; a file already over its limits is not cut by force."""
    base = [f"- line {i}" for i in range(8)]
    out = apply(base, base, [Edit("add", None, f"- new {i}") for i in range(5)], Limits(10, 999))
    assert len(out.lines) == 10
    assert [e.text for e, _w in out.refused] == ["- new 4", "- new 3", "- new 2"]
    out = apply(base, base, [Edit("add", None, "x" * 60) for _ in range(3)], Limits(99, 200))
    assert sum(len(x) + 1 for x in out.lines) == 194 and len(out.refused) == 1
    out = apply(base, base, [Edit("add", 1, "y" * (MAX_LINE_CHARS + 1))], LIMITS)
    assert out.lines == base and "longer than" in out.refused[0][1]
    big = [f"- hand line {i}" for i in range(30)]  # a person wrote 30 lines into a 10-line file
    out = apply(
        big, big, [Edit("replace", 2, "- fixed"), Edit("add", 3, "- more")], Limits(10, 9999)
    )
    assert len(out.lines) == 30 and out.lines[1] == "- fixed"


def test_numbers_outside_the_file_and_double_edits_are_refused() -> None:
    """Line numbers the sent file did not have, and a second edit of one line, are refused."""
    out = apply(
        BASE,
        BASE,
        [Edit("replace", 9, "x"), Edit("delete", -1), Edit("delete", 2), Edit("replace", 2, "y")],
        LIMITS,
    )
    assert out.lines == [BASE[0], *BASE[2:]]
    assert [why.split(" ")[0] for _e, why in out.refused] == ["no", "no", "line"]


def _random_edit(rng: random.Random, n: int) -> Edit:
    op = rng.choice(["add", "add", "replace", "delete"])
    line = rng.choice([None, 0, -3, n + 2, *range(1, n + 1)]) if n else rng.choice([None, 0, 3])
    text = rng.choice(["- a", "- b", "x" * rng.randrange(1, 700), "", "- " + "z" * 50])
    return Edit(op, line if op == "add" else (line or 1), text)  # type: ignore[arg-type]


def test_property_random_edits_and_rewrites_never_break_the_guards() -> None:
    """Seeded random bases, hand edits, edit lists and full-file rewrites: never over the
    line limit or byte budget (when the file was within them), never more lines lost than
    the allowance, every line of the result either kept, or written by an accepted edit."""
    rng = random.Random(20261123)
    for round_ in range(3000):
        limits = Limits(rng.randrange(1, 40), rng.randrange(40, 2000), rng.choice([0.0, 0.25, 0.5]))
        base = [f"- line {rng.randrange(30)}" for _ in range(rng.randrange(limits.lines + 1))]
        while sum(len(x) + 1 for x in base) > limits.chars:
            base.pop()
        current = list(base)
        for _ in range(rng.randrange(3)):  # a person edits meanwhile
            if current and rng.random() < 0.5:
                current.pop(rng.randrange(len(current)))
            elif len(current) < limits.lines:
                current.insert(rng.randrange(len(current) + 1), f"- hand {rng.randrange(9)}")
        if round_ % 2:
            new = [f"- line {rng.randrange(30)}" for _ in range(rng.randrange(limits.lines + 5))]
            edits = edits_from_rewrite(base, new)
        else:
            edits = [_random_edit(rng, len(base)) for _ in range(rng.randrange(30))]
        out = apply(base, current, edits, limits)
        within = len(current) <= limits.lines and sum(len(x) + 1 for x in current) <= limits.chars
        if within:
            assert len(out.lines) <= limits.lines, (round_, len(out.lines))
            assert sum(len(x) + 1 for x in out.lines) <= limits.chars, round_
        allowance = int(len(current) * limits.max_loss)
        assert out.deleted <= allowance, round_
        replacements = sum(1 for e in edits if e.op == "replace") + 1
        lost = Counter(current) - Counter(out.lines)
        assert sum(lost.values()) <= allowance + replacements, round_
        written = {e.text for e in edits if e.op != "delete"}
        assert all(line in current or line in written for line in out.lines), round_
        assert all(len(x) <= MAX_LINE_CHARS for x in out.lines if x not in current), round_


def test_an_add_of_a_line_the_file_already_holds_is_refused() -> None:
    """The guards drop an add that repeats a line of the file (or of the same reply), so a
    careless curator cannot fill a file with the same line; the refusal is recorded."""
    from wsd.daemon.curation.guards import Caps, review
    from wsd.daemon.curation.reply import parse_reply

    text = "# User\n- Prefers tabs\n"
    parsed = parse_reply(
        "user.md +$: - **Prefers tabs.**\nuser.md +$: - Likes tea\nuser.md +$: - likes TEA"
    )
    checked = review(
        parsed,
        base={"user.md": text},
        current={"user.md": text},
        turns=1,
        truncated=False,
        caps=Caps(),
    )
    assert checked.md_updates == {"user.md": "# User\n- Prefers tabs\n- Likes tea\n"}
    assert sum("already says it" in r for r in checked.refused) == 2
