"""Issue 20: secrets still stored and sent to the Bridge. The whole corpus through the hook's
hygiene path (every form redacted, every ordinary line kept), gitleaks' whole rule set, and each
new form's edges: what must be redacted and the ordinary text beside it that must not be."""

from __future__ import annotations

import base64
import json
import random
import re
from typing import Any

import pytest

from tests.gitleaks_examples import CONTEXTS, COVERED
from tests.secrets_corpus import (
    GITLEAKS_KINDS,
    GITLEAKS_SECRETS,
    ORDINARY_TEXT,
    SECRETS,
    SENSITIVE,
)
from tests.test_hygiene import leaked
from tests.test_secret_rules import _examples, _secret
from wsd.redact import clean_text, clean_value
from wsd.redact.gitleaks import GATED, GITLEAKS, GITLEAKS_END, NAMED, named_regex


def _through_capture(text: str) -> str:
    """``text`` as the capture path stores it: a tool input's field, cleaned by clean_value
    (which runs clean_text on every string), serialised."""
    return json.dumps(clean_value({"command": text, "nested": [{"output": text}]}))


def test_corpus_figures(capsys: Any) -> None:
    """≥ 150 secret forms, ≥ 50 ordinary lines: all forms caught, all lines kept (100 %/100 %)."""
    caught = sum(leaked(SENSITIVE[t], clean_text(t, 100_000)) is None for _, t in SECRETS)
    kept = sum(clean_text(t, 100_000) == t for t in ORDINARY_TEXT)
    with capsys.disabled():
        print(f"\nredaction corpus: {caught}/{len(SECRETS)} forms caught, "
              f"{kept}/{len(ORDINARY_TEXT)} ordinary lines kept")  # fmt: skip
    assert len(SECRETS) >= 150 and len(ORDINARY_TEXT) >= 50
    assert (caught, kept) == (len(SECRETS), len(ORDINARY_TEXT))


@pytest.mark.parametrize(
    ("kind", "text"), SECRETS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(SECRETS)]
)
def test_every_form_is_redacted_through_the_capture_path(kind: str, text: str) -> None:
    """Each corpus form leaves no 12-character piece of its secret in what capture stores."""
    stored = _through_capture(text)
    assert leaked(SENSITIVE[text], stored) is None, stored
    assert leaked(json.dumps(SENSITIVE[text])[1:-1], stored) is None, stored
    assert f"[REDACTED:{kind}]" in stored


@pytest.mark.parametrize("text", ORDINARY_TEXT)
def test_every_ordinary_line_survives_the_capture_path(text: str) -> None:
    """Each ordinary line is stored exactly as written."""
    assert json.loads(_through_capture(text))["command"] == text


# -- gitleaks' whole rule set -----------------------------------------------------------------

#: The gitleaks rules ported as GATED (keyword near the token) and the two left out.
GATED_IDS = {
    "sourcegraph-access-token", "vault-service-token", "facebook-access-token",
    "atlassian-api-token", "curl-auth-header", "curl-auth-user", "kubernetes-secret-yaml",
    "hashicorp-tf-password", "freemius-secret-key",
}  # fmt: skip
LEFT_OUT = {"generic-api-key", "pkcs12-file"}


def test_every_gitleaks_rule_is_accounted_for() -> None:
    """222 rules in gitleaks v8.30.0+27: shape rules, the hook's own table, provider-name
    rules, keyword-gated rules, and the two covered otherwise; none counted twice."""
    ids = [r for r, *_ in GITLEAKS] + list(COVERED) + [r for r, *_ in NAMED]
    ids += sorted(GATED_IDS - {"atlassian-api-token"}) + sorted(LEFT_OUT)
    assert len(ids) == len(set(ids)) == 222 - 1  # atlassian-api-token: shape rule + named part
    assert "atlassian-api-token" not in ids
    assert {kind for kind, *_ in GATED} >= {r.replace("-", "_") for r in GATED_IDS}


@pytest.mark.parametrize("rule", NAMED, ids=[r[0] for r in NAMED])
def test_every_provider_name_rule_example_is_redacted(rule: tuple[Any, ...]) -> None:
    """Examples generated from each provider-name rule's regex (the provider's name, a
    separator, a secret), in gitleaks' contexts: none survives."""
    rid, _keywords, _entropy, ident, secret, case = rule
    rx = named_regex(ident, secret, case)
    examples = _examples(rid, rx)
    assert examples, rid
    for example in examples:
        m = re.search(rx, example)
        assert m is not None
        token = _secret(m)
        for context in ("{s}", "found {s} in the log", '{{"config": "{s}"}}', CONTEXTS[3]):
            text = context.format(i="x", I="X", s=example.strip())
            out = re.sub(r"\[REDACTED:\w+\]", "", clean_text(text, 10_000))
            assert leaked(token, out) is None, (rid, text, out)


# -- each form's edges ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "https://host:8080/path@v2",
        "https://registry.npmjs.org:443/@scope/pkg/-/pkg-1.0.0.tgz",
        "postgres://app:${DB_PASSWORD}@db/app",
        "mysql://u:%(password)s@h/db",
        '{"url":"//a:b","email":"x@y.z"}',
    ],
)
def test_url_forms_that_hold_no_password_are_kept(text: str) -> None:
    """A port and a path, a template or a later "@" are not a URL's password."""
    assert clean_text(text) == text


def test_url_password_keeps_user_and_host() -> None:
    """The password goes, whatever it holds; the user and host stay readable."""
    for password in ("a1#b2c3d4e5", "a1?b2/c3d4e5", "a1%40b2%23c3d4", "p@ss@w0rdXyz"):
        out = clean_text(f"redis://cache:{password}@cache.internal:6379/0")
        assert out == "redis://cache:[REDACTED:url_password]@cache.internal:6379/0", password


def test_split_fields_in_a_tool_input_dict_are_redacted() -> None:
    """A dict whose name field names a secret has its value field redacted; other pairs stay."""
    value = "Zk38fjQ0aLm29XcVb81q"
    out = clean_value(
        {
            "headers": [{"header_name": "X-Api-Key", "header_value": value}],
            "env": [
                {"name": "API_TOKEN", "value": value},
                {"Name": "DB_PASSWORD", "Value": "hunter2"},
                {"name": "LOG_LEVEL", "value": "debug"},
                {"key": "Content-Type", "value": "application/json"},
            ],
        }
    )
    flat = json.dumps(out)
    assert value not in flat and "hunter2" not in flat
    assert '"debug"' in flat and '"application/json"' in flat


def test_base64_that_is_not_a_secret_is_kept() -> None:
    """Decoded prose, image data and file names stay; a decoded token does not."""
    for text in (
        "echo 'aGVsbG8gd29ybGQ=' | base64 -d",
        "echo U2VlIHlvdSBhdCB0aGUgbWVldGluZyB0b21vcnJvdw== | base64 --decode",
        "base64 -d < payload.b64 > payload.bin",
    ):
        assert clean_text(text) == text
    assert "[REDACTED:" in clean_text("echo SHVudGVyMlh5IVpx | base64 -d")  # Hunter2Xy!Zq


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("the wifi password is hunter2Xy!", "hunter2Xy!"),
        ("PIN: 4821", "4821"),
        ("my pin is 739201", "739201"),
        ("the password is now Tr0ub4dor&3.", "Tr0ub4dor&3"),
        ("The passphrase is 'correct horse battery staple'", "correct horse battery staple"),
        ("password：hunter2Xy", "hunter2Xy"),
    ],
)
def test_passwords_in_prose_are_redacted(text: str, secret: str) -> None:
    """A password given in a sentence goes; the sentence stays."""
    out = clean_text(text)
    assert secret not in out and "[REDACTED:" in out
    assert out.split("[REDACTED:")[0] == text[: text.index(secret)]


def test_fullwidth_context_is_kept_as_written() -> None:
    """Matching reads fullwidth separators as ASCII, but what is kept is as it was written."""
    assert (
        clean_text("ＡＰＩ＿ＫＥＹ＝Zk38fjQ0aLm29XcVb81q")
        == "ＡＰＩ＿ＫＥＹ＝[REDACTED:secret_assignment]"
    )
    assert clean_text("会议时间：10：30，地点：三楼。") == "会议时间：10：30，地点：三楼。"


def test_keyword_start_rules_find_what_finditer_finds() -> None:
    """Rules tried only where their word is find exactly what a full scan finds."""
    from wsd.redact import rules as rr

    rr.rules()  # (builds _STARTS)
    rng = random.Random(20)
    pieces = [t for _, t in SECRETS] + ORDINARY_TEXT + ["Password is Xy12ab!!", "İ", " api "]
    for _ in range(300):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 5)))
        low = text.lower()
        for i in rr._STARTS:
            full = [m.span() for m in rr._rx(i).finditer(text)]
            assert [m.span() for m in rr._matches(i, text, low)] == full, (i, text)


# -- issue 33: gitleaks' rules kind by kind -----------------------------------------------------


def test_every_gitleaks_rule_has_a_corpus_form() -> None:
    """The corpus holds one form of each of gitleaks' 222 rules but the two it cannot hold."""
    ids = [r for r, *_ in GITLEAKS] + list(COVERED) + [r for r, *_ in NAMED]
    ids += sorted(GATED_IDS - {"atlassian-api-token"}) + sorted(LEFT_OUT)
    ids.append("atlassian-api-token")
    assert set(GITLEAKS_KINDS) == set(ids) - {"pkcs12-file", "private-key"}
    assert len(GITLEAKS_SECRETS) == len(GITLEAKS_KINDS) == 220


_PUNCTUATION = (
    "Use {s}.",
    "key ({s}) expires",
    "tokens: [{s}]",
    "<token>{s}</token>",
    "{s}, then restart",
    "?token={s}&page=2",
    "https://example.com/{s}/",
    "{{{s}}}",
)


_ENDED = [r for r in GITLEAKS if GITLEAKS_END in r[4]]


@pytest.mark.parametrize("rule", _ENDED, ids=[r[0] for r in _ENDED])
def test_a_token_followed_by_punctuation_is_redacted(rule: tuple[Any, ...]) -> None:
    """gitleaks ends a token only at a quote, a space or ';': ours at any character that cannot
    continue it, so a token before '.', ')', ']', '</', ',', '&', '/' or '}' leaves nothing."""
    rid, _anchors, _group, _entropy, rx = rule
    for example in _examples(rid, rx, n=2):
        m = re.search(rx, example)
        assert m is not None
        token = _secret(m).strip("'\"`; \n")
        for context in _PUNCTUATION:
            text = context.format(s=token)
            out = re.sub(r"\[REDACTED:\w+\]", "", clean_text(text, 10_000))
            assert leaked(token, out) is None, (rid, text, out)


@pytest.mark.parametrize(
    "text",
    [
        "<apiToken>\n    Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB\n</apiToken>",
        'var apiToken string = "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB"',
        '$apiToken .= "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB"',
        '$apiToken ??= "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB";',
        'API_TOKEN += "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB"',
        'System.setProperty("API_TOKEN", "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB")',
    ],
)
def test_generic_api_key_contexts_of_gitleaks_are_redacted(text: str) -> None:
    """gitleaks' generic-api-key true examples (a type before '=', '.=', '??=', '+=', a call's
    comma, an XML element) are taken by the entropy net."""
    assert "Zf3D0LXCM3EIMbg" not in clean_text(text)


def test_a_quoted_password_holding_a_secret_word_is_redacted() -> None:
    """``password = "rootpasswd"`` (gitleaks' hashicorp-tf-password example) is a literal, and
    the quotes stay; a field's name in quotes is not a password."""
    assert (
        clean_text('password       = "rootpasswd"')
        == 'password       = "[REDACTED:hashicorp_tf_password]"'
    )
    for text in (
        'password = "new_password"',
        '{"password": "userPassword"}',
        'password = "password"',
    ):
        assert clean_text(text) == text


def test_curl_user_that_is_a_key_is_redacted() -> None:
    """``curl -u "key:"`` (the key as the user, no password) and a password in braces go;
    ``-u admin:`` and ``{password}`` stay."""
    out = clean_text('curl -u "d2LkV78zLx!tQ9:" https://localhost:9200')
    assert "d2LkV78zLx" not in out and "[REDACTED:" in out
    out = clean_text('curl -X POST --user "{acd3c08b-74e8}":"{ZqL5kVrX1n8tA2}" https://x.example')
    assert "ZqL5kVrX1n8tA2" not in out
    for text in (
        "curl -u admin: https://x.example",
        'curl -u "{user}:{password}" https://x.example',
    ):
        assert clean_text(text) == text


def test_bedrock_short_lived_key_is_redacted_past_its_fixed_start() -> None:
    """gitleaks' regex for a short-lived Bedrock key is its fixed start, the same in every key;
    the presigned URL after it (credential, signature) is the secret and goes too."""
    body = base64.b64encode(
        b"&X-Amz-Credential=ASIAQWERTYUIOP123456&X-Amz-Signature=9f8e7d6c"
    ).decode()
    out = clean_text(f"AWS_BEARER_TOKEN_BEDROCK=bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t{body}")
    assert body[-24:] not in out and "[REDACTED:" in out
