"""The provider rules derived from gitleaks and the entropy net (issue 13, item 2): every rule's
examples are redacted wherever they are written, its false examples are not taken for it, and
ordinary output (hashes, ids, checksums, paths, URLs, code) survives."""

from __future__ import annotations

import random
import re
from re import _constants as sre_c  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import pytest

from tests.gitleaks_examples import CONTEXTS, COVERED, LITERAL
from tests.test_hygiene import leaked
from wsd.redact import clean_text
from wsd.redact.gitleaks import GITLEAKS
from wsd.redact.rules import RULES
from wsd.redact.shape import entropy

_PRINTABLE = [chr(c) for c in range(33, 127)]


def _sample(rx: str, rng: random.Random) -> str:
    """A random string of the language of ``rx`` (as gitleaks' secrets.NewSecret makes its
    examples); lookarounds and anchors generate nothing."""
    out: list[str] = []
    _emit(sre_parse.parse(rx), rng, out)
    return "".join(out)


def _charset(items: Any) -> list[str]:
    chars: list[str] = []
    negate = False
    for op, av in items:
        if op == sre_c.NEGATE:
            negate = True
        elif op == sre_c.LITERAL:
            chars.append(chr(av))
        elif op == sre_c.RANGE:
            chars += [chr(c) for c in range(av[0], av[1] + 1)]
        elif op == sre_c.CATEGORY:
            chars += {
                sre_c.CATEGORY_DIGIT: list("0123456789"),
                sre_c.CATEGORY_WORD: list(
                    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789"
                ),
                sre_c.CATEGORY_SPACE: [" "],
            }.get(av, ["x"])
    if negate:
        chars = [c for c in _PRINTABLE if c not in chars and c not in "\"'`"]
    # A backslash in a token is a JSON escape (hygiene reads ``\/`` as ``/``), not a character.
    # Nor is a line break (a token wrapped over lines is one context among many, not this).
    return [c for c in chars if c not in "\\\r\n"] or ["x"]


def _emit(pattern: Any, rng: random.Random, out: list[str]) -> None:
    for op, av in pattern:
        if op == sre_c.LITERAL:
            out.append(chr(av))
        elif op == sre_c.NOT_LITERAL:
            out.append(rng.choice([c for c in "abcXYZ019" if c != chr(av)]))
        elif op == sre_c.IN:
            out.append(rng.choice(_charset(av)))
        elif op == sre_c.ANY:  # in these token regexes an unescaped "." means a dot
            out.append(".")
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
            low, high, sub = av
            high = low + 12 if high == sre_c.MAXREPEAT else min(high, low + 12)
            for _ in range(rng.randint(low, max(low, high))):
                _emit(sub, rng, out)
        elif op == sre_c.SUBPATTERN:
            _emit(av[-1], rng, out)
        elif op == sre_c.BRANCH:
            _emit(rng.choice(av[1]), rng, out)
        # AT, ASSERT, ASSERT_NOT, GROUPREF_EXISTS...: nothing to emit


def _examples(rule_id: str, rx: str, n: int = 3) -> list[str]:
    """``n`` secrets generated from ``rx`` that ``rx`` itself finds (its secret group)."""
    compiled, rng, found = re.compile(rx), random.Random(rule_id), []
    for _ in range(400):
        candidate = _sample(rx, rng)
        m = compiled.search(candidate)
        if m is None:
            continue
        secret = _secret(m)
        min_entropy = next((e for r, _a, _g, e, _x in GITLEAKS if r == rule_id), 0.0)
        if len(secret) >= 12 and entropy(secret) >= max(min_entropy, 3.0):
            found.append(candidate)
        if len(found) == n:
            break
    return found


def _secret(m: re.Match[str]) -> str:
    """The secret of a match as gitleaks reads it (the first group that matched), unless that
    group is a short repeated part (then the whole match, as the hook redacts it)."""
    group = next((g for g in range(1, (m.re.groups or 0) + 1) if m.group(g)), 0)
    return m.group(group) if len(m.group(group)) >= 12 else m.group(0)


#: Whose generated examples are not tokens: gitleaks' private-key regex lets any text stand for
#: the base64 body. Its written-out examples are run instead.
GENERATED_ONLY_LITERAL = {"private-key"}
ALL = {rid: rx for rid, _a, _g, _e, rx in GITLEAKS} | COVERED


@pytest.mark.parametrize("rule_id", sorted(ALL))
def test_every_gitleaks_rule_example_is_redacted_wherever_it_is_written(rule_id: str) -> None:
    """Examples generated from each rule's regex, in every context gitleaks writes them (and
    wrapped in a colour code), plus the rule's written-out true examples: none survives."""
    rx = ALL[rule_id]
    examples = [] if rule_id in GENERATED_ONLY_LITERAL else _examples(rule_id, rx)
    assert examples or rule_id in GENERATED_ONLY_LITERAL, f"no example generated for {rule_id}"
    keyword = re.sub(r"[^a-z]", "", rule_id.split("-")[0]) or "x"
    compiled = re.compile(rx)
    for example in examples:
        m = compiled.search(example)
        assert m is not None
        secret = _secret(m).strip("'\"`; \n")
        for context in CONTEXTS:
            text = context.format(i=keyword, I=keyword.upper(), s=example.strip())
            out = re.sub(r"\[REDACTED:\w+\]", "", clean_text(text, 10_000))
            assert leaked(secret, out) is None, (rule_id, text, out)
    for text in LITERAL.get(rule_id, {}).get("tps", []):
        out = clean_text(text, 10_000)
        assert "[REDACTED:" in out, (rule_id, text, out)


PORTED = {rid for rid, *_ in GITLEAKS}


@pytest.mark.parametrize("rule_id", sorted(r for r in LITERAL if r in PORTED))
def test_gitleaks_false_examples_are_not_taken_for_the_rule(rule_id: str) -> None:
    """Each ported rule's written-out false examples are not redacted as that rule."""
    kind = rule_id.replace("-", "_")
    for text in LITERAL[rule_id]["fps"]:
        assert f"[REDACTED:{kind}]" not in clean_text(text, 10_000), (rule_id, text)


def test_the_table_names_its_source_and_every_rule_compiles() -> None:
    """The table says where it comes from, and every rule is a valid Python regex."""
    import wsd.redact.gitleaks as table

    assert "gitleaks v8.30.0" in (table.__doc__ or "") and "MIT" in (table.__doc__ or "")
    assert len(RULES) >= 90
    for _kind, _group, _entropy, rx, _check in RULES:
        re.compile(rx)


# -- false positives on ordinary output ------------------------------------------------------

_rng = random.Random(13)
_HEX = "0123456789abcdef"


def _hex(n: int) -> str:
    return "".join(_rng.choice(_HEX) for _ in range(n))


def _b64(
    n: int, alphabet: str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _uuid() -> str:
    return f"{_hex(8)}-{_hex(4)}-4{_hex(3)}-a{_hex(3)}-{_hex(12)}"


ORDINARY_OUTPUT = [
    f"commit {_hex(40)}\nAuthor: Dev <dev@example.com>\nDate:   Mon Nov 2 10:00:00 2026 +0100",
    f"{_hex(7)} Fix the invoice parser (#42)\n{_hex(7)} Bump version to 2.1.0",
    f"HEAD is now at {_hex(12)} Merge pull request #1197 from acme/feature-x",
    f"sha256:{_hex(64)}",
    f"{_hex(64)}  dist/app-2.1.0.tar.gz",
    f"{_hex(32)}  README.md",
    f"request_id={_uuid()} status=200 duration=35ms",
    f'{{"id": "{_uuid()}", "name": "invoice.pdf"}}',
    f"Digest: sha256:{_hex(64)}\nStatus: Downloaded newer image for python:3.12-slim",
    f'"integrity": "sha512-{_b64(86)}=="',
    '"resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz"',
    "drwxr-xr-x  5 agent agent 4096 Nov  2 10:00 documents\n"
    "-rw-r--r--  1 agent agent  512 Nov  2 10:01 notes.md",
    "/workspace/documents/2026/invoices/acme-2026-11-02.pdf",
    "See https://docs.example.com/api/v2/reference#authentication for the token flow.",
    "GET https://api.github.com/repos/acme/app/pulls?state=open&per_page=100 200",
    "Successfully installed requests-2.32.3 urllib3-2.2.3 certifi-2024.8.30",
    "numpy==2.1.0\npandas==2.2.3\npython-dateutil==2.9.0.post0",
    "key_length = 2048  # bits\nkey_type = 'rsa'\ntoken_count = len(tokens)",
    "def authenticate(user: User, password_hash: bytes) -> bool:\n    return check(password_hash)",
    "api_version: 2023-06-01\nauth_method: oauth2\naccess_mode: read-only",
    'session = requests.Session()\nsession.headers["Accept"] = "json"',
    "bypass = use_cache_when_offline",
    f'<img src="data:image/png;base64,iVBORw0KGgo{_b64(400)}">',
    f'"thumbnail": "iVBORw0KGgoAAAANSUhEUgAA{_b64(200)}"',
    'Traceback (most recent call last):\n  File "/app/main.py", line 12, in <module>\n'
    "KeyError: 'api_key'",
    "2026-11-02T10:00:00.123Z INFO worker started pid=4242 queue=invoices concurrency=4",
    "Total: 1,234.50 EUR (VAT 21%) — due 2026-12-01, IBAN on the invoice.",
    "aws s3 cp s3://acme-reports/2026/11/report.csv ./report.csv --region eu-west-1",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGm9Sx5cJfq9tR1nX7b4Wk3LzP8yQ2dE6fH0aB1cD2eF me@laptop",
    "Session ended. Your API usage this month: 1,532 requests.",
    "The password policy needs 12 characters; the API key rotates monthly.",
    "cookie consent banner dismissed; session expires in 30 minutes",
    "curl -sSfL https://example.com/install.sh | sh -s -- -u latest",
    "mysql -u root -p -h db.internal shop   # prompts for the password",
    "docker login ghcr.io -u acme --password-stdin < token.txt",
]


def test_ordinary_output_is_untouched_and_the_rate_is_reported(capsys: Any) -> None:
    """Git hashes, UUIDs, checksums, digests, integrity hashes, image data, paths, URLs without
    credentials, package lists and code survive hygiene unchanged (false-positive rate 0)."""
    changed = [t for t in ORDINARY_OUTPUT if clean_text(t, 100_000) != t]
    with capsys.disabled():
        print(f"\nfalse positives on ordinary output: {len(changed)}/{len(ORDINARY_OUTPUT)}")
    assert changed == []
