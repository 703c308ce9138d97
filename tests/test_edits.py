"""The md file logic: line-addressed edits, rewrites turned into edits, and their guards."""

from __future__ import annotations

import random

from wsd.daemon.curation.judging.edits import (
    MAX_LINE_CHARS,
    Edit,
    Limits,
    apply,
    edits_from_rewrite,
    lost_lines,
    plain,
)

LIMITS = Limits(lines=200, chars=12_000)
#: No loss limit: for the tests of where edits land.
FREE = Limits(lines=200, chars=12_000, max_loss=1.0)
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
    out = apply(BASE, BASE, edits, FREE)
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
    assert out.refused == [] and out.lost == 2


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
    out = apply(BASE, current, edits, FREE)
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


def test_a_two_line_rewrite_of_a_twenty_line_file_loses_a_quarter() -> None:
    """A careless full-file reply of 2 lines for a 20-line file: its 2 lines replace 2, and
    3 more are deleted (5, a quarter, lost in all), the other 15 kept; what was refused says
    why."""
    base = [f"- fact {i}" for i in range(20)]
    out = apply(base, base, edits_from_rewrite(base, ["# User", "- new"]), LIMITS)
    assert len(out.lines) == 17 and out.lines[:2] == ["# User", "- new"]
    assert out.lines[2:] == base[5:] and out.lost == 5
    assert len(out.refused) == 15 and all("loss limit" in why for _e, why in out.refused)


def test_replacing_every_line_loses_no_more_than_deleting_them() -> None:
    """Found by an attack: ``user.md ~1: .`` ... ``~52: .`` left 52 dots when only deletions
    were counted. Replacements and a full-file block of all-different lines lose a quarter,
    like deletions; a line moved or only re-punctuated is not lost."""
    base = [f"- The person's fact number {i}" for i in range(52)]
    dots = apply(base, base, [Edit("replace", i + 1, ".") for i in range(52)], LIMITS)
    assert lost_lines(base, dots.lines) == 13 and dots.lines[13:] == base[13:]
    assert sum("loss limit" in why for _e, why in dots.refused) == 39
    other = [f"- Something else entirely, {i}" for i in range(120)]
    block = apply(base, base, edits_from_rewrite(base, other), LIMITS)
    assert lost_lines(base, block.lines) == 13
    moved = [*base[1:], base[0]]
    moved[5] = moved[5].upper() + "!"
    out = apply(base, base, edits_from_rewrite(base, moved), LIMITS)
    assert out.lines == moved and out.refused == [] and out.lost == 0


def test_a_small_file_may_lose_one_line_a_batch() -> None:
    """A quarter of 3 lines rounds to 0: a file that small may still lose one line per
    batch (an outdated line must be replaceable), but not two; 0 turns removals off."""
    small = ["- Lives in Porto", "- Prefers tabs", "- Has a cat"]
    one = apply(small, small, [Edit("replace", 1, "- Lives in Lisbon")], LIMITS)
    assert one.lines[0] == "- Lives in Lisbon" and one.refused == []
    two = apply(small, small, [Edit("delete", 2), Edit("replace", 1, "- Lisbon")], LIMITS)
    assert two.lost == 1 and len(two.refused) == 1
    none = apply(small, small, [Edit("delete", 2)], Limits(200, 12_000, max_loss=0.0))
    assert none.lines == small


def test_a_day_allowance_holds_only_the_lines_of_a_day_ago() -> None:
    """With what the file had a day ago given (its baseline), removals of those lines past
    the day's allowance are refused as held; lines written since may still go, and adds
    are untouched."""
    old = [f"- old fact {i}" for i in range(8)]
    new = [f"- new fact {i}" for i in range(8)]
    limits = Limits(200, 12_000, kept=frozenset(plain(x) for x in old), kept_allowance=1)
    edits = [Edit("delete", 1), Edit("delete", 2), Edit("delete", 9), Edit("add", None, "- x")]
    out = apply(old + new, old + new, edits, limits)
    assert out.eroding and out.lines == [*old[1:], *new[1:], "- x"]
    assert [why for _e, why in out.refused] == [limits.erosion_reason]


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
    the allowance (whatever the form: deleted, replaced, rewritten away), every line of the
    result either kept, or written by an accepted edit."""
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
        allowance = limits.allowance(sum(1 for line in current if plain(line)))
        assert lost_lines(current, out.lines) <= allowance, round_
        written = {e.text for e in edits if e.op != "delete"}
        assert all(line in current or line in written for line in out.lines), round_
        assert all(len(x) <= MAX_LINE_CHARS for x in out.lines if x not in current), round_


def test_an_add_of_a_line_the_file_already_holds_is_refused() -> None:
    """The guards drop an add that repeats a line of the file (or of the same reply), so a
    careless curator cannot fill a file with the same line; the refusal is recorded."""
    from wsd.daemon.curation.judging.guards import Caps, review
    from wsd.daemon.curation.judging.reply import parse_reply

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
