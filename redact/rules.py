"""Running the rules of :mod:`wsd.redact.gitleaks` and :mod:`wsd.redact.forms`.

:func:`find` returns the secrets these rules see in a text as non-overlapping
``(start, end, replacement)`` spans, left to right; :mod:`wsd.redact.engine` merges them with
its table's. A rule runs only when one of its anchors is in the text, and is compiled on
its first use: a hook process whose text holds no anchor never imports ``re``.
"""

from __future__ import annotations

from wsd.redact.forms import EXTRA, FORMS, MORE_NAMED, NET_REGEX, NET_WORDS, STARTS
from wsd.redact.gitleaks import GATED, GITLEAKS, NAMED, named_regex, token_end
from wsd.redact.shape import (
    classes,
    entropy,
    generated,
    lenient_name,
    name_before,
    names_a_value,
    plausible_secret,
    quoted_literal,
    uuid_kept,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterator

    Redactor = Callable[[str], str]

_ALL_NAMED = (*NAMED, *MORE_NAMED)
#: What triggers each rule, in the order of :func:`rules`: gitleaks' shape rules, issue 13's and
#: issue 20's forms, the provider-name rules, the keyword-gated ones (on a tie of two matches,
#: the earlier rule names the kind).
_ANCHORS: tuple[tuple[str, ...], ...] = (
    *(a for _r, a, _g, _e, _x in GITLEAKS),
    *(a for _k, a, _g, _e, _x, _c in (*EXTRA, *FORMS)),
    *(kw for _r, kw, _e, _i, _s, _c in _ALL_NAMED),
    *(a for _k, a, _g, _e, _x, _c in GATED),
)
#: anchor -> rules it triggers; exact ones (with a capital letter) are looked for as written,
#: the others in the lower-cased text (gitleaks' keywords are matched that way).
_EXACT: dict[str, list[int]] = {}
_LOWER: dict[str, list[int]] = {}
for _i, _anchors in enumerate(_ANCHORS):
    for _anchor in _anchors:
        (_LOWER if _anchor == _anchor.lower() else _EXACT).setdefault(_anchor, []).append(_i)
_rules: tuple[tuple[str, int, float, str, str], ...] = ()
#: rule -> the lower-case words one of which starts its every match (its regex opens with a
#: case-insensitive choice of them): it is tried only where one of them is, not everywhere.
_STARTS: dict[int, tuple[str, ...]] = {-1: NET_WORDS}


def rules() -> tuple[tuple[str, int, float, str, str], ...]:
    """(kind, secret group, minimum entropy, regex, check) of every rule; built on first use
    (a hook whose text triggers no rule never writes out the provider-name regexes)."""
    global _rules
    if not _rules:
        named = tuple(
            (rid.replace("-", "_"), 1, ent, named_regex(ident, secret, case), "")
            for rid, _kw, ent, ident, secret, case in _ALL_NAMED
        )
        _rules = (
            *(
                (rid.replace("-", "_"), group, ent, token_end(rx), "")
                for rid, _a, group, ent, rx in GITLEAKS
            ),
            *((kind, group, ent, rx, check) for kind, _a, group, ent, rx, check in EXTRA),
            *((kind, group, ent, rx, check) for kind, _a, group, ent, rx, check in FORMS),
            *named,
            *((kind, group, ent, rx, check) for kind, _a, group, ent, rx, check in GATED),
        )
        by_id = {id(source): words for source, words in STARTS}  # (no hashing of long strings)
        _STARTS.update((i, by_id[id(r[3])]) for i, r in enumerate(_rules) if id(r[3]) in by_id)
        first = len(GITLEAKS) + len(EXTRA) + len(FORMS)
        for k, (_rid, _kw, _ent, ident, _secret, _case) in enumerate(_ALL_NAMED):
            words = tuple(w.lower() for w in ident.split("|"))
            if all(w.replace("_", "").isalnum() for w in words):
                _STARTS[first + k] = words
    return _rules


def __getattr__(name: str) -> object:
    if name == "RULES":  # the table, for tests and tools
        return rules()
    raise AttributeError(name)


#: The shortest text any rule can match (shorter fields are not scanned).
MIN_CHARS = 12

_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate", "bot", "apikey"})

_compiled: dict[int, re.Pattern[str]] = {}
_SPECIAL = frozenset({"k8s", "userpass", "prose", "pair", "b64"})


def _rx(i: int) -> re.Pattern[str]:
    found = _compiled.get(i)
    if found is None:
        import re

        source = NET_REGEX if i < 0 else rules()[i][3]
        found = _compiled[i] = re.compile(source)
    return found


def _triggered(text: str, low: str) -> list[int]:
    hits = {i for a, rules in _EXACT.items() if a in text for i in rules}
    hits.update(i for a, rules in _LOWER.items() if a in low for i in rules)
    if any(c in text for c in "=:,>") and any(w in low for w in NET_WORDS):  # its operators
        hits.add(-1)
    return sorted(hits, key=lambda i: (i < 0, i))  # the entropy net last: named rules win ties


def _net(m: re.Match[str]) -> tuple[int, int, str] | None:
    value = m.group("v")
    if value.split(" ", 1)[0].lower() in _SCHEMES or "[REDACTED:" in value:
        return None  # "Authorization: Bearer …": the token after it is another rule's
    named = name_before(m.string, m.start()) + m.group(0)[: m.start("v") - m.start()]
    name = named.lower()
    if lenient_name(name):  # but not a bare lower-case word: ``bypass = use_cache``
        ok = plausible_secret(value, "password") and not value.replace("_", "").islower()
    else:
        ok = plausible_secret(value, name) and generated(value)
    # Not a value's name (``password_file =``, ``secretName:``, ``PublicKey =``), nor a UUID
    # under a name that is not a credential's (``idempotency_key:``): issue 46's kept text.
    ok = ok and names_a_value(named.strip("\"'`:=>,.+?\t ")) and not uuid_kept(value, named)
    return (m.start("v"), m.end("v"), "[REDACTED:secret_assignment]") if ok else None


def _cookie(_kind: str, _group: int, m: re.Match[str]) -> list[tuple[int, int, str]]:
    """Each value of a ``Cookie:`` header's ``name=value`` pairs (attributes kept)."""
    text, (start, end) = m.string, m.span(1)
    spans: list[tuple[int, int, str]] = []
    pos = start
    while pos < end:
        stop = text.find(";", pos, end)
        stop = end if stop < 0 else stop
        eq = text.find("=", pos, stop)
        name = text[pos:eq].strip().lower() if eq >= 0 else ""
        if eq >= 0 and name not in ("path", "domain", "expires", "max-age", "samesite"):
            value = text[eq + 1 : stop].strip()
            if plausible_secret(value, "cookie"):
                vs = text.index(value, eq + 1)
                spans.append((vs, vs + len(value), "[REDACTED:cookie]"))
        pos = stop + 1
    return spans


def _spans(i: int, m: re.Match[str], inner: Redactor | None) -> list[tuple[int, int, str]]:
    if i < 0:
        found = _net(m)
        return [found] if found else []
    kind, group, min_entropy, _rx_source, check = rules()[i]
    if check == "cookie":
        return _cookie(kind, group, m)
    if check in _SPECIAL:  # the checks of issue 20's forms (they use this module's helpers)
        from wsd.redact.checks import check_match

        # Without the whole redactor (kind_of), these rules alone look inside base64.
        return check_match(check, kind, group, m, inner or _rules_alone)
    if group == 0:  # gitleaks: the first group that matched, else the whole match ...
        group = next((g for g in range(1, (m.re.groups or 0) + 1) if m.group(g)), 0)
        if len(m.group(group)) < MIN_CHARS:  # ... unless that is a repeated part of the token
            group = 0
    start, end = m.span(group)
    secret = m.group(group) or ""
    if check == "lenient":
        ok = plausible_secret(secret.strip("'\""), "password") or quoted_literal(secret)
        ok = ok and "[REDACTED:" not in m.group(0)  # ``-u "[REDACTED:…]:"``: done already
        if len(secret) > 2 and secret[0] in "'\"" and secret[-1] == secret[0]:
            start, end = start + 1, end - 1  # the quotes stay: ``= "[REDACTED:…]"``
        kind = (ok and kind_of(secret)) or kind  # `docker login -p dckr_pat_…`: the token's kind
    else:
        ok = entropy(secret) >= min_entropy and not secret.startswith("[REDACTED")
        ok = ok and (check != "random" or classes(secret) >= 2)
        ok = ok and (check != "mixed" or classes(secret) == 3)
    return [(start, end, f"[REDACTED:{kind}]")] if ok and end > start else []


def _rules_alone(text: str) -> str:
    """``text`` with what these rules see taken out (an inner redactor made of them alone)."""
    out, pos = [], 0
    for start, end, rep in find(text):
        out += [text[pos:start], rep]
        pos = end
    return "".join(out) + text[pos:]


def find(text: str, inner: Redactor | None = None) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, replacement) of the secrets these rules see, in order.

    ``inner`` is the whole redactor (:func:`wsd.redact.engine.redact`), handed down for what
    hides a text inside a match (base64 is decoded and looked at again); without it, these
    rules alone look."""
    if len(text) < 8:
        return []
    triggered = _triggered(text, text.lower())
    if len(text) < MIN_CHARS:  # only a password in prose is this short: "PIN: 4821"
        triggered = [i for i in triggered if i >= 0 and rules()[i][4] == "prose"]
    if not triggered:
        return []
    found: list[tuple[int, int, str]] = []
    low = text.lower()
    for i in triggered:
        for m in _matches(i, text, low):
            found += _spans(i, m, inner)
    return merge(found)


def _matches(i: int, text: str, low: str) -> Iterator[re.Match[str]]:
    """``finditer`` of rule ``i``, tried only where a match can start (see _STARTS)."""
    rx, words = _rx(i), _STARTS.get(i)
    if words is None or len(low) != len(text):  # (lower() may lengthen a few characters)
        yield from rx.finditer(text)
        return
    starts: set[int] = set()
    for w in words:
        at = low.find(w)
        while at >= 0:
            starts.add(at)
            at = low.find(w, at + 1)
    last = 0
    for at in sorted(starts):
        if at < last:
            continue
        m = rx.match(text, at)
        if m is not None:
            last = max(m.end(), at + 1)
            yield m


def merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """``spans`` in order without overlaps: of two overlapping, the earlier (then longer) names
    the kind; a later one reaching past it extends it (no piece of either is left)."""
    out: list[tuple[int, int, str]] = []
    for start, end, rep in sorted(spans, key=lambda s: (s[0], -s[1])):
        if out and start < out[-1][1]:
            first, last, kept = out[-1]
            if end > last:  # its context before the marker is already covered
                out[-1] = (first, end, kept + rep[max(0, rep.find("[REDACTED:")) :])
            continue
        out.append((start, end, rep))
    return out


def kind_of(value: str) -> str | None:
    """The kind of the one token ``value`` is exactly (quotes aside), if a rule knows it."""
    found = find(value)
    stripped = value.strip("'\"` ")
    if len(found) == 1 and found[0][1] - found[0][0] >= len(stripped):
        return found[0][2][len("[REDACTED:") : -1]
    return None
