"""schema.fastjson behaves like the json module for everything the hook path feeds it."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from wsd.schema import fastjson

DOCUMENTS = [
    '{"a": 1}',
    ' [1, 2.5e3, -0, 1e400, "x\\u00e9\\ud800", true, false, null] \n',
    '"s"',
    "3",
    "NaN",
    "-Infinity",
    '{"nested": {"deep": [[[{}]]]}}',
    '{"dup": 1, "dup": 2}',
    '"\\u0000 nul"',
    "[" * 50 + "]" * 50,
]
INVALID = [
    "",
    "   ",
    '{"a":',
    "{'a': 1}",
    '{"a": 1} extra',
    "[1,]",
    "tru",
    "\x00",
    '"\\x"',
    '"unterminated',
    "[1] [2]",
]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_loads_matches_json(text: str) -> None:
    """Valid documents parse to the same value as json.loads."""
    ours, theirs = fastjson.loads(text), json.loads(text)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("text", INVALID)
def test_loads_rejects_what_json_rejects(text: str) -> None:
    """Invalid documents raise ValueError, as json.loads does."""
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        fastjson.loads(text)


def test_dumps_matches_json_on_random_values() -> None:
    """Random nested values serialise exactly like json.dumps(ensure_ascii=False)."""
    rng = random.Random(7)
    alphabet = 'aé✓\n\t"\\\x00\x1f/<>'

    def value(depth: int) -> object:
        kind = rng.randrange(7 if depth < 4 else 4)
        if kind == 0:
            return "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
        if kind == 1:
            return rng.choice([0, -1, 2**70, 1.5, -0.0, 1e300])
        if kind == 2:
            return rng.choice([True, False, None])
        if kind == 3:
            return ""
        if kind == 4:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {str(value(depth + 1)): value(depth + 1) for _ in range(rng.randrange(4))}

    for _ in range(500):
        v = value(0)
        assert fastjson.dumps(v) == json.dumps(v, ensure_ascii=False, allow_nan=False)


def test_dumps_refuses_nan_like_strict_json() -> None:
    """NaN and infinities are refused, as with allow_nan=False."""
    for bad in (float("nan"), [float("inf")], {"k": float("-inf")}):
        with pytest.raises(ValueError):
            fastjson.dumps(bad)
    assert fastjson.dumps([1]) == "[1]"  # a failed call leaves no state behind


def test_hook_path_does_not_import_re_json_or_typing() -> None:
    """Importing the command hook loads neither re, json, typing nor dataclasses (start-up cost)."""
    code = (
        "import sys, hooks.command; heavy = {'re', 'json', 'typing', 'dataclasses',"
        " 'inspect', 'contextlib'}; print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
