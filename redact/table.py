"""The redactor's own rule table: one combined regex of anchored alternatives, its prefilter.

The bottom of :mod:`wsd.redact.engine` (which reads each match and judges it): the table of the
common token forms (Anthropic, OpenAI, AWS, GitHub, Slack, JWT, PEM private keys, ``NAME=value``
assignments, ``Authorization`` headers, URL passwords…), compiled into one regex on first use,
and :func:`may_hold_secret`, which lets a text with no candidate skip ``import re`` altogether.
Standard library only; nothing here imports another redaction module.
"""

from __future__ import annotations

#: Longest terminated PEM block matched; bounds every other match too.
PEM_BODY = 10_000
#: Every match of the table is shorter than this: the edge zone of a window of a huge text
#: where a secret cut by the window's edge may sit unrecognised (:mod:`wsd.redact.text`).
UNSAFE = PEM_BODY + 512

# Value of a NAME=value assignment: quoted (spaces allowed) or a bare run up to a delimiter.
_VALUE = r"""(?P<q>\\?["'`])?(?P<v>(?(q)[^"'`\\\n]{1,512}|[^\s"'`\\,;&<>(){}\[\]]{1,512}))"""
_SEP = r"""[A-Za-z0-9_.-]{0,40}+(?:\\?["'`])?[ \t]{0,4}(?:=>|:=|[:=])[ \t]{0,4}"""
_PEM_LABEL = r"(?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----"
_B64URL = "[A-Za-z0-9_-]"

# (kind, anchor, prefix, prefix width, word boundary, rest, check). A match starts at its anchor,
# a single character chosen to be rare in prose and code (``J`` of ``eyJ``, ``_`` of ``ghp_``),
# so the scan enters few positions and sre's BRANCH rejects other alternatives in one compare.
# The ``prefix`` before the anchor is checked by a lookbehind and added back to the span; with
# ``boundary`` no letter or digit may precede it. Each bounded match is under UNSAFE chars.
# fmt: off
_ALTERNATIVES: tuple[tuple[str, str, str, int, bool, str, str], ...] = (
    ("private_key", "-", "", 0, False, rf"----BEGIN {_PEM_LABEL}(?:[\s\S]{{0,{PEM_BODY}}}?"
                                       rf"-----END {_PEM_LABEL}|[\s\S]*)", ""),
    ("secret_assignment", "-", "", 0, False, r"-[A-Za-z][A-Za-z0-9-]{0,30}?(?i:password|passwd"
                                             r"|secret|passphrase|token|key)(?:=|[ \t]{1,4})",
     "assign"),
    ("anthropic_key", "-", "sk", 2, True, r"ant-(?:api|admin|sid|oat)\d\d-[A-Za-z0-9_-]{20,300}",
     ""),
    ("openai_key", "-", "sk", 2, True, r"(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,300}",
     "random"),
    ("pypi_token", "-", "pypi", 4, True, r"AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,300}", ""),
    ("stripe_key", "_", "[sr]k", 2, True, r"(?:live|test|prod)_[A-Za-z0-9]{10,250}", ""),
    ("stripe_key", "_", "whsec", 5, True, r"[A-Za-z0-9+/=]{20,100}", ""),
    ("github_token", "_", "gh[pousr]", 3, True, r"[A-Za-z0-9]{36,255}", ""),
    ("github_token", "_", "github", 6, True, r"pat_[A-Za-z0-9_]{22,255}", ""),
    ("huggingface_token", "_", "hf", 2, True, r"[A-Za-z0-9]{30,40}(?![A-Za-z0-9])", ""),
    ("npm_token", "_", "npm", 3, True, r"[A-Za-z0-9]{36}(?![A-Za-z0-9])", ""),
    ("aws_access_key", "A", "", 0, True, r"(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])", ""),
    ("google_api_key", "A", "", 0, True, r"Iza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])", ""),
    ("gitlab_token", "g", "", 0, True, r"l(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas|soat|ffct)-"
                                       r"[A-Za-z0-9_.-]{20,200}", ""),
    ("gitlab_token", "G", "", 0, True, r"R1348941[A-Za-z0-9_-]{20,64}", ""),
    # (a full stop after it ends a sentence: issue 33)
    ("sendgrid_key", "G", "S", 1, True, r"\.[A-Za-z0-9_=.-]{66}(?![A-Za-z0-9_=-]|\.[A-Za-z0-9_=-])",
     ""),
    ("slack_token", "x", "", 0, True, r"(?:ox[abposre]-[A-Za-z0-9-]{10,250}|app-\d-[A-Za-z0-9-]"
                                      r"{10,250})", ""),
    ("slack_webhook", ":", "https", 5, False, r"//hooks\.slack\.com/(?:services|workflows"
                                              r"|triggers)/[A-Za-z0-9/_-]{10,300}", ""),
    # The password may hold "/", "?", "#" and "%40" (and, unencoded, "@" when more follow).
    ("url_password", ":", "", 0, False, r"//[^\s:/?#@\[\]\\]{0,100}:(?P<v>[^\s@\"'`<>]{1,200}"
                                         r"(?:@[^\s@/?#\"'`<>]{1,100}(?=@))*)@", "url"),
    ("jwt", "J", "ey", 2, True, rf"{_B64URL}{{3,3000}}\.{_B64URL}{{5,3000}}\.{_B64URL}{{0,3000}}",
     ""),
    *(("bearer_token", anchor, "[Aa][Uu][Tt][Hh][Oo][Rr][Ii]", 7, False,
     r"""(?i:ation)(?:\\?["'])?[ \t]{0,4}[:=][ \t]{0,4}(?:\\?["'])?"""
     r"(?P<s>(?i:basic|bearer|token)[ \t]{1,4})?(?P<v>[A-Za-z0-9._~+/=-]{8,4096})", "auth")
      for anchor in "zZ"),
    *(("bearer_token", anchor, "", 0, False,
       r"(?:earer|EARER)[ \t]{1,4}(?P<v>[A-Za-z0-9._~+/=-]{16,4096})", "random")
      for anchor in "Bb"),
    # NAME=value: the anchor is the k of key/token, the c of secret or the p of password; the
    # start of the name is read back and the value read on by _redaction (one small regex each
    # instead of six copies of the value pattern to compile).
    *(("secret_assignment", anchor, "", 0, False, rf"(?i:{word}){_SEP}", "assign")
      for anchor, word in (("k", "(?<=k)ey|(?<=tok)en"), ("K", "(?<=k)ey|(?<=tok)en"),
                           ("c", "(?<=sec)ret"), ("C", "(?<=sec)ret"),
                           ("p", "ass(?:wor)?d|assphrase"), ("P", "ass(?:wor)?d|assphrase"))),
)

# What any match of _ALTERNATIVES must contain: until the regex is compiled, text without any of
# these skips it, so a short-lived hook process whose fields hold no candidate never pays for
# ``import re`` and the compile (~7 ms). Keep this a superset when editing the table.
_BY_CHAR = {
    "_": ("k_live_", "k_test_", "k_prod_", "whsec_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
          "github_pat_", "hf_", "npm_"),
    "-": ("PRIVATE KEY", "sk-", "pypi-", "xox", "xapp-", "glpat-", "gldt-", "glrt-", "glptt-",
          "glcbt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-", "glffct-"),
    "A": ("AKIA", "ASIA", "ABIA", "ACCA", "AIza"),
}
_ALWAYS = ("://", "eyJ", "SG.", "GR1348941")
# fmt: on


def may_hold_secret(text: str) -> bool:
    """False only when no alternative of the secret regex can match ``text`` (see _BY_CHAR)."""
    low = text.lower()
    if "authoriz" in low or "bearer" in low:
        return True
    if ("=" in text or ":" in text or "--" in text) and (
        "key" in low or "token" in low or "secret" in low or "passw" in low or "passphrase" in low
    ):
        return True
    if any(f in text for f in _ALWAYS):
        return True
    return any(c in text and any(f in text for f in frags) for c, frags in _BY_CHAR.items())


class _Compiled:
    """The regexes, compiled once per process on first use (import stays cheap)."""

    def __init__(self) -> None:
        import re

        parts: list[str] = []
        self.kinds: list[str] = []
        self.checks: list[str] = []
        self.back: list[int] = []
        self.has_value: list[bool] = []  # a (?P<v>…) group marks the part to replace
        for i, (kind, anchor, prefix, width, boundary, rest, check) in enumerate(_ALTERNATIVES):
            guard = f"(?<={prefix}{anchor})" if prefix else ""
            guard += f"(?<![A-Za-z0-9]{prefix}{anchor})" if boundary else ""
            body = rest.replace("(?P<", f"(?P<g{i}")
            parts.append(f"{anchor}{guard}(?P<g{i}>{body})")
            self.kinds.append(kind)
            self.checks.append(check)
            self.back.append(width)
            self.has_value.append("(?P<v>" in rest)
        # ASCII: (?i) must not fold non-ASCII letters (the prefilter relies on str.lower()).
        self.secret = re.compile("|".join(parts), re.ASCII)
        self.value = re.compile(_VALUE)
        # Base64 lines, read backwards from an END line: the last one short, the first one
        # possibly cut (or one word of prose); "\\n" too, for a block inside JSON text.
        # (A base64 char before a backslash, read backwards, is the n of an escaped "\\n".)
        line, nl = r"(?:[A-Za-z0-9+/=](?!\\))", r"(?:\s|[rn]\\){1,4}"
        self.pem_end = re.compile(rf"-----END {_PEM_LABEL}")
        self.pem_body_reversed = re.compile(
            rf"(?:{nl})?{line}{{0,100}}(?:{nl}{line}{{16,100}}){{0,200}}(?:{nl}{line}{{1,100}})?",
            re.ASCII,
        )


_compiled: _Compiled | None = None


def compiled() -> _Compiled:
    """The table's regexes, compiled on the first call (the import stays cheap)."""
    global _compiled
    if _compiled is None:
        _compiled = _Compiled()
    return _compiled


def worth_scanning(text: str) -> bool:
    """Whether ``text`` must be scanned with :func:`compiled`'s regex: once it is compiled,
    always (the prefilter only spares the compile); before that, only when
    :func:`may_hold_secret`."""
    return _compiled is not None or may_hold_secret(text)
