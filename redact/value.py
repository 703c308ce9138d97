"""Hygiene of a JSON-like value (a tool's input or response): every string through
:func:`wsd.redact.text.clean_text`, the whole bounded.

The top of the redaction package with :mod:`wsd.redact.text`, under the same constraints (it
runs in the hook process: standard library only, no recursion, nothing compiled up front).

Contract: :func:`clean_value` never raises and returns JSON-ready data (str keys, finite
floats) whose serialised size stays within a small multiple of ``max_chars``.
"""

from __future__ import annotations

from wsd.redact.engine import specific_kind
from wsd.redact.shape import SENSITIVE_KEY_WORDS, plausible_secret
from wsd.redact.text import DEFAULT_MAX_CHARS, clean_text, to_str

# typing costs milliseconds to import; mypy treats any TYPE_CHECKING name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_MAX_DEPTH = 32
_MAX_ITEMS = 100
_BUDGET_FACTOR = 3  # clean_value keeps about this many max_chars of content in total
_OMITTED = "…"
_INF = float("inf")  # (math.isfinite without importing math: the hook's start-up counts)

#: A dict field whose key ends in one of these may name a secret (``{"name": "API_TOKEN"}``,
#: ``header_name: X-Api-Key``); the field ending in a :data:`_VALUE_KEYS` word holds its value.
_NAME_KEYS = ("name", "key", "header", "field", "param", "variable", "var")
_VALUE_KEYS = ("value", "val")


def _named_secret(d: dict[object, object]) -> str:
    """The secret a dict's name field names (``{"name": "API_TOKEN", "value": …}``,
    ``header_name: X-Api-Key``), whose value field is then redacted like ``API_TOKEN=…``."""
    if len(d) > 12:
        return ""
    for k, v in d.items():
        if isinstance(k, str) and isinstance(v, str) and len(v) <= 80:
            low = k.lower()
            if low.endswith(_NAME_KEYS) and any(w in v.lower() for w in SENSITIVE_KEY_WORDS):
                return v
    return ""


_Task = tuple[object, int, "Any", "Any", str]  # (value, depth, parent container, slot, sensitive)


class _Walker:
    """Iterative, budgeted conversion behind :func:`clean_value`: no recursion anywhere.

    The budget counts serialised characters (quotes and separators roughly included); once it
    is spent every value still to convert becomes ``…``, and no container is opened any more.
    """

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max(max_chars, 1)
        self.budget = max(256, _BUDGET_FACTOR * max_chars)

    def text(self, s: str, limit: int, sensitive: str = "") -> str:
        """Clean one string within the budget; redact it whole under a secret-naming key."""
        out = clean_text(s, min(limit, max(32, self.budget))) if self.budget > 0 else _OMITTED
        if sensitive and "[REDACTED:" not in out and plausible_secret(out, sensitive):
            aws = "secretaccesskey" in sensitive.lower()
            kind = specific_kind(out, "aws_secret_key" if aws else "secret_assignment")
            out = f"[REDACTED:{kind}]"
        self.budget -= len(out) + 6
        return out

    def convert(self, src: object, depth: int, sensitive: str, stack: list[_Task]) -> object:
        """``src`` made JSON-safe; a container comes back empty and its items go on ``stack``."""
        if self.budget <= 0:
            self.budget -= 6
            return _OMITTED
        if src is None or isinstance(src, bool | float):
            self.budget -= 8
            if isinstance(src, float) and not -_INF < src < _INF:  # NaN fails too
                return str(float(src))
            return src
        if isinstance(src, int):
            self.budget -= src.bit_length() // 3 + 6
            if src.bit_length() > 1000:  # str() of it raises (int_max_str_digits), json too
                return f"[int of {src.bit_length()} bits]"
            if "passw" in sensitive.lower() and src >= 1000:  # "password": 12345678
                return "[REDACTED:secret_assignment]"
            return int(src)
        if isinstance(src, str | bytes | bytearray | memoryview):
            raw = src if isinstance(src, str) else bytes(src).decode("utf-8", "replace")
            return self.text(raw, self.max_chars, sensitive)
        if not isinstance(src, dict | list | tuple | set | frozenset):
            return self.text(to_str(src), self.max_chars)
        if depth >= _MAX_DEPTH:
            return self.text("[max depth reached]", 32)
        tasks: list[_Task] = []
        out: dict[str, object] | list[object] = {} if isinstance(src, dict) else []
        named = _named_secret(src) if isinstance(src, dict) else ""
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for i, (k, v) in enumerate(items):
            if i >= _MAX_ITEMS or self.budget <= 0:
                more = f"[… {len(src) - i} more {'entries' if isinstance(src, dict) else 'items'}]"
                if isinstance(out, dict):
                    out["…"] = more
                else:
                    out.append(more)
                break
            if isinstance(out, dict):
                key = self.text(k if isinstance(k, str) else to_str(k), min(self.max_chars, 200))
                key = f"{key}#{i}" if key in out else key
                out[key] = None  # placeholder keeps the order; the task fills it in
                low = key.lower()
                hint = key if any(w in low for w in SENSITIVE_KEY_WORDS) else ""
                if named and low.endswith(_VALUE_KEYS):  # {"name": "API_TOKEN", "value": …}
                    hint = named
                tasks.append((v, depth + 1, out, key, hint))
            else:
                out.append(None)
                self.budget -= 2
                tasks.append((v, depth + 1, out, i, sensitive))
        stack.extend(reversed(tasks))  # reversed: the first item is converted (budgeted) first
        return out

    def run(self, value: object) -> object:
        root: list[object] = [None]
        stack: list[_Task] = [(value, 0, root, 0, "")]
        while stack:
            src, depth, parent, slot, sensitive = stack.pop()
            try:
                parent[slot] = self.convert(src, depth, sensitive, stack)
            except Exception:  # a dict changing size under us and the like: keep going
                parent[slot] = f"[unconvertible {type(src).__name__}]"
        return root[0]


def clean_value(value: object, max_chars: int = DEFAULT_MAX_CHARS) -> object:
    """JSON-ready, hygienic copy of a JSON-like value (tool input / response); never raises.

    Strings (dict keys too) go through :func:`clean_text`; bytes are decoded first; ints, finite
    floats, bools and None stay; NaN/Infinity and huge ints become strings; tuples and sets
    become lists; anything else becomes its cleaned ``str()``. Containers deeper than
    32 levels become a marker, only the first 100 items of each are kept (then a marker), and
    the content is budgeted at about 3 × ``max_chars`` (anything after that becomes ``…``), so
    the JSON stays within a small multiple of ``max_chars``. A string under a key naming a
    secret (``password``, ``api_key``, ``Authorization``…) is redacted whole when it looks like
    a value rather than a reference. ``json.dumps(result, allow_nan=False)`` always works.
    """
    try:
        return _Walker(max_chars).run(value)
    except Exception:  # MemoryError and the like: never break the hook
        return "[unconvertible value]"
