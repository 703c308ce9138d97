"""How a match of one of issue 20's forms (:data:`wsd.redact.forms.FORMS`) is judged.

:func:`check_match` gives the ``(start, end, replacement)`` spans a match stands for, by its
rule's ``check``: a Kubernetes Secret's data values, the password of ``user:password``, the
value after "the password is", the value of a name/value pair whose name names a secret, and
base64 that decodes to a secret. Imported only when such a rule matched.
"""

from __future__ import annotations

from wsd.redact.shape import (
    NOT_SECRET_PREFIXES,
    classes,
    entropy,
    generated,
    lenient_name,
    plausible_secret,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable

    Redactor = Callable[[str], str]

Span = tuple[int, int, str]

# fmt: off
#: Words after "the password is" that describe it rather than give it.
_PROSE_STOP = frozenset({"ok", "okay", "none", "empty", "blank", "unset", "same", "wrong",
                         "correct", "incorrect", "required", "expired", "invalid", "valid",
                         "missing", "hidden", "masked", "n/a", "na", "tbd", "todo", "null",
                         "changed", "reset", "set", "stored", "encrypted", "hashed",
                         "case-sensitive", "case-insensitive"})
_LENGTH_WORDS = (" characters", " chars", " digits", " letters", " long", " symbols", " char")
_SECRET_NAME_WORDS = ("key", "token", "secret", "pass", "pwd", "auth", "credential", "cookie",
                      "session", "signature", "private", "pin")
#: A decoder in the text: what it is fed is meant to be read decoded.
_DECODERS = ("base64 -d", "base64 --decode", "base64 -D", "base64 -di", "b64decode", "atob(",
             "frombase64string", "base64.decode", "decode64", "base64decode", "base64 -i -d")
_ALLOWED_USERPASS = frozenset({"changeit", "changeme", "password", "pass", "pwd", "test",
                               "token", "secret"})
# fmt: on


def _k8s(kind: str, group: int, m: re.Match[str]) -> list[Span]:
    """Each value of the ``data:`` / ``stringData:`` block of a manifest of ``kind: Secret``."""
    import re

    text = m.string
    near = text[max(0, m.start() - 400) : m.end() + 400]
    if not re.search(r"(?i)\bkind[\"']?\s*:\s*[\"']?secret\b", near):
        return []
    start, end = m.span(group)
    block = text[start:end]
    spans: list[Span] = []
    if group == 1:  # JSON: "data": {"name": "value", ...}
        for pair in re.finditer(r"\"[^\"]{0,200}\"\s*:\s*\"([^\"\\]{1,8000})\"", block):
            if pair.group(1).strip() and not pair.group(1).startswith("[REDACTED:"):
                spans.append((start + pair.start(1), start + pair.end(1), f"[REDACTED:{kind}]"))
        return spans
    for line in re.finditer(r"[^\n]+", block):
        value = re.match(r"\s*(?:[\w.-]+:[ \t]*)?([^\n]*?)\s*$", line.group(0))
        if value is None:
            continue
        v = value.group(1)
        if not v or v in ("|", ">", "|-", ">-", '""', "''") or v.startswith(("{{", "[REDACTED:")):
            continue
        vs = start + line.start() + value.start(1)
        spans.append((vs, vs + len(v), f"[REDACTED:{kind}]"))
    return spans


def _userpass(kind: str, group: int, m: re.Match[str]) -> list[Span]:
    """The password of a ``user:password`` credential (the user stays readable)."""
    group = group or next((g for g in range(1, (m.re.groups or 0) + 1) if m.group(g)), 0)
    start = m.start(group)
    whole = m.group(group)
    cut = whole.find(":")
    password = whole[cut + 1 :]
    stripped = password.strip("'\"")
    if "[REDACTED:" in whole:
        return []  # redacted already (the user, or the password)
    if cut >= 0 and not stripped.strip("'\""):
        # ``-u "sk_…:"``: a key given as the user with no password (gitleaks' example, issue
        # 33: Stripe, Mailgun and others document this); the user is the secret when generated.
        user = whole[:cut].strip("'\"")
        if len(user) >= 10 and classes(user) >= 2 and plausible_secret(user, "password"):
            us = start + whole.index(user)
            return [(us, us + len(user), f"[REDACTED:{kind}]")]
        return []
    if len(stripped) > 9 and stripped[0] == "{" and stripped[-1] == "}" and "{{" not in stripped:
        inner = stripped[1:-1]  # "{ZqL5kVrX1n8tA2}" (gitleaks' example), not "{password}"
        if inner.isalnum() and classes(inner) >= 2:
            vs = start + cut + 1 + password.index(inner)
            return [(vs, vs + len(inner), f"[REDACTED:{kind}]")]
    if cut < 0 or stripped.lower() in _ALLOWED_USERPASS:
        return []
    if not plausible_secret(stripped, "password") or "{{" in stripped:
        return []
    vs = start + cut + 1 + password.index(stripped)
    return [(vs, vs + len(stripped), f"[REDACTED:{kind}]")]


def _prose(kind: str, group: int, m: re.Match[str]) -> list[Span]:
    """The value in "the wifi password is hunter2Xy!", "PIN: 4821", "private key is 0x…"."""
    start, end = m.span(group)
    value = m.group(group)
    word = m.group(0)[: start - m.start()].lower()
    quoted = value[0] in "\"'“`" and len(value) >= 2
    if quoted:
        start, end, value = start + 1, end - 1, value[1:-1]
    else:
        stripped = value.rstrip(".,;:)]}'\"”’")
        end, value = end - (len(value) - len(stripped)), stripped
        if m.string[end : end + 12].lower().startswith(_LENGTH_WORDS):
            return []  # "the password is 12 characters long"
        if any(c in value for c in "()[]{}"):
            return []  # "password: get_password()": code, not prose
        if value.startswith(NOT_SECRET_PREFIXES):
            return []  # "reset your password at https://…": the rest of a URL, a path
    if word.startswith("pin"):
        ok = value.isdigit() and 4 <= len(value) <= 12
    elif "key" in word.split()[1:2] or word.startswith(("private", "secret", "signing")):
        ok = len(value) >= 16 and (generated(value) or classes(value) >= 2)
    else:
        ok = (
            len(value) >= 4
            and plausible_secret(value, "password")
            and value.lower() not in _PROSE_STOP
            and not _is_length(value)
            and (quoted or not value.isalpha() or any(c.isupper() for c in value[1:]))
        )
    return [(start, end, f"[REDACTED:{kind}]")] if ok and end > start else []


def _is_length(value: str) -> bool:
    """``12``, ``8-64``, ``12+``: a length rule, not a password."""
    core = value.replace("-", "").replace("+", "").replace("–", "")
    return core.isdigit() and len(value) <= 7 and len(core) <= 4 and value[0] != "0"


def _pair(kind: str, _group: int, m: re.Match[str]) -> list[Span]:
    """The value of ``{"name": "API_TOKEN", "value": "…"}`` and the like."""
    name, value = m.group("n"), m.group("v").strip()
    low = name.lower()
    if not any(w in low for w in _SECRET_NAME_WORDS) or value.startswith(NOT_SECRET_PREFIXES):
        return []
    if not plausible_secret(value, "password" if lenient_name(name) else name):
        return []
    vs = m.start("v") + m.group("v").index(value)
    return [(vs, vs + len(value), f"[REDACTED:{kind}]")]


def _decode64(s: str) -> str | None:
    """``s`` decoded from base64 (standard or URL-safe) when it is printable UTF-8 text."""
    import binascii

    core = s.rstrip("=").replace("-", "+").replace("_", "/")
    if len(core) % 4 == 1:
        return None
    try:
        text = binascii.a2b_base64(core + "=" * (-len(core) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if len(text) < 6 or not all(c.isprintable() or c in "\r\n\t" for c in text):
        return None
    return text


def _b64(kind: str, group: int, m: re.Match[str], inner: Redactor | None = None) -> list[Span]:
    """Base64 that decodes to a secret, to ``user:password``, or (fed to a decoder) to one
    generated-looking token: ``echo c2stYW50… | base64 -d``."""
    start, end = m.span(group)
    s = m.group(group)
    if classes(s) < 2 or s.startswith(NOT_SECRET_PREFIXES):
        return []
    decoded = _decode64(s)
    if decoded is None:
        return []
    plain = decoded.strip()
    user, colon, password = plain.partition(":")
    hides = inner is not None and inner(decoded) != decoded
    ok = hides or (
        bool(colon)
        and 0 < len(user) <= 100
        and not any(c.isspace() for c in plain)
        and plausible_secret(password, "password")
    )
    if not ok and any(d in m.string.lower() for d in _DECODERS):
        ok = (
            len(plain) >= 8
            and not any(c.isspace() for c in plain)
            and classes(plain) >= 2
            and entropy(plain) >= 2.5
        )
    return [(start, end, f"[REDACTED:{kind}]")] if ok else []


_CHECKS: dict[str, Callable[[str, int, re.Match[str]], list[Span]]] = {
    "k8s": _k8s,
    "userpass": _userpass,
    "prose": _prose,
    "pair": _pair,
}


def check_match(
    check: str, kind: str, group: int, m: re.Match[str], inner: Redactor | None = None
) -> list[Span]:
    """The spans one match of a rule with this ``check`` stands for (``inner``: the whole
    redactor, for a text hidden inside the match; else these rules alone look)."""
    if check == "b64":
        return _b64(kind, group, m, inner)
    return _CHECKS[check](kind, group, m)
