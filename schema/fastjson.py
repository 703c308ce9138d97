"""JSON for the hook path without importing :mod:`json`.

``import json`` pulls in :mod:`re` (for its number scanner), and on a small VM
``re`` alone costs about as much as starting the interpreter — more than the
whole budget of a command hook. The C accelerator ``_json`` that :mod:`json`
itself uses needs no ``re``, so the hook path drives it directly, configured
exactly as ``json.loads``/``json.dumps(ensure_ascii=False, allow_nan=False)``
configure it. Where ``_json`` is missing (another Python implementation) the
standard module is used instead. tests/test_fastjson.py pins the equivalence.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None  # type: ignore[assignment]

_WHITESPACE = " \t\n\r"


class _ScannerContext:
    """The attributes ``_json.make_scanner`` reads (json.decoder.JSONDecoder's defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {
        "-Infinity": float("-inf"),
        "Infinity": float("inf"),
        "NaN": float("nan"),
    }.__getitem__
    memo: ClassVar[dict[str, str]] = {}


if _json is not None:
    # typeshed describes these private constructors loosely; they take exactly
    # what json.decoder / json.encoder pass them, as below.
    _c: Any = _json
    _scan = _c.make_scanner(_ScannerContext())
    # (markers, default, encoder, indent, key_separator, item_separator,
    #  sort_keys, skipkeys, allow_nan) as json.JSONEncoder.iterencode passes them;
    # markers=None skips the cycle check: our values come from parsing or from
    # wsd.redact.clean_value, both acyclic, and a shared markers dict would be
    # left dirty by an encoding error.
    _encode = _c.make_encoder(
        None, None, _json.encode_basestring, None, ": ", ", ", False, False, False
    )


def loads(text: str) -> Any:
    """Parse one JSON document; raises ValueError (or RecursionError) like ``json.loads``."""
    if _json is None:  # pragma: no cover
        import json

        return json.loads(text)
    start = 0
    end = len(text)
    while start < end and text[start] in _WHITESPACE:
        start += 1
    try:
        value, pos = _scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"Expecting value at char {exc.value}") from None
    except SystemError:
        # _json builds its JSONDecodeError from json.decoder found in sys.modules, never
        # importing it: without it every malformed document ('{', '{"a":1,}', "{'a':1}")
        # came out as "SystemError: <_json.Scanner object> returned NULL" and the hook
        # reported the event as a failed write. Only malformed input gets here, so the
        # standard module's cost (it imports re) is paid only then, for its exact message.
        import json

        return json.loads(text)
    while pos < end and text[pos] in _WHITESPACE:
        pos += 1
    if pos != end:
        raise ValueError(f"Extra data at char {pos}")
    return value


def dumps(value: object) -> str:
    """Serialise like ``json.dumps(value, ensure_ascii=False, allow_nan=False)``."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    if isinstance(value, str):
        return str(_json.encode_basestring(value))
    return "".join(_encode(value, 0))
