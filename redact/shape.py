"""What a secret's value looks like: the shape checks every redaction rule shares.

The bottom of the redaction modules (no import of theirs but the rule data): a value's
entropy and character classes, whether it looks generated, whether a name is a password's,
whether a value is worth redacting at all (placeholders, references and paths are not), and
the name an assignment's value is given (:func:`name_before`).
"""

from __future__ import annotations

from wsd.redact.forms import NET_ENTROPY, NET_LENIENT

# fmt: off
PLACEHOLDERS = frozenset({"none", "null", "nil", "true", "false", "undefined", "str", "string",
                           "bytes", "int", "optional", "any", "required", "redacted", "hidden"})
REFERENCES = ("os.", "process.env", "env.", "getenv", "self.", "args.", "config.", "settings.")
LENIENT_WORDS = ("secret", "passw", "passphrase", "authorization", "cookie")
SENSITIVE_KEY_WORDS = ("key", "token", *LENIENT_WORDS)
# fmt: on


#: Values that are paths, URLs, integrity hashes or file contents (PNG, JPEG, GIF, PDF).
NOT_SECRET_PREFIXES = ("/", "./", "~/", "http:", "https:", "sha1-", "sha256-", "sha384-",
                        "sha512-", "data:", "iVBORw0KGgo", "/9j/", "R0lGOD", "JVBERi0")  # fmt: skip


def entropy(s: str) -> float:
    """Shannon entropy of ``s`` in bits per character."""
    import math

    n = len(s)
    counts: dict[str, int] = {}
    for c in s:
        counts[c] = counts.get(c, 0) + 1
    return -sum(k / n * math.log2(k / n) for k in counts.values()) if n else 0.0


def classes(s: str) -> int:
    """How many of lower case, upper case and digits occur in ``s``."""
    return (s.upper() != s) + (s.lower() != s) + any(d in s for d in "0123456789")


def plausible_secret(value: str, name: str) -> bool:
    """Whether the value of a sensitive-looking name is worth redacting.

    Never: under 4 chars, placeholders (``None``, ``str``, ``****``), references (``$VAR``,
    ``${{…}}``, ``os.environ``, ``self.token``), already redacted. ``KEY``/``TOKEN`` names are
    common in code (``key=lambda``, ``max_tokens=4096``), so their values must also look
    generated (8+ chars mixing two of lower/upper/digits, not a path); ``PASSWORD``/``SECRET``/
    ``Authorization``/``Cookie`` values need nothing more.
    """
    low = value.lower()
    if len(value) < 4 or low in PLACEHOLDERS or value.startswith("[REDACTED"):
        return False
    if (
        value[0] in "$%<{[(*#)]},;?"
        or value.count(value[0]) == len(value)
        or low.startswith(REFERENCES)
    ):
        return False  # a reference, template or mask, not a value
    ident = value.replace(".", "_").isidentifier() and not any(d in value for d in "0123456789")
    if ident and any(w in low for w in SENSITIVE_KEY_WORDS):
        return False  # password=password, token=self.token: passing a variable along
    if any(w in name.lower() for w in LENIENT_WORDS):
        return True
    words = value.replace("-", "_").split("_")
    if len(words) >= 2 and all(w.isalpha() for w in words):
        return False  # Content-Type, X_Forwarded_For: a name, not a generated value
    return len(value) >= 8 and classes(value) >= 2 and not value.startswith(("/", "~/", "./"))


def quoted_literal(secret: str) -> bool:
    """A quoted password that :func:`plausible_secret` turns down only for holding a secret's
    word: ``password = "rootpasswd"`` (gitleaks' hashicorp-tf-password example, issue 33). In
    quotes it is a literal, not a variable passed along; but not the word itself (``"password"``),
    a run of words (``"new_password"``) or a field's name (``"userPassword"``, ``"db_secret"``)."""
    value = secret[1:-1]
    if len(secret) < 6 or secret[0] not in "'\"" or secret[-1] != secret[0]:
        return False
    if not value.isidentifier() or wordy(value) or value.lower() in PLACEHOLDERS:
        return False
    for word in ("password", "passwd", "passphrase", "secret", "token", "key", "cookie"):
        cut = value.lower().rfind(word)
        if (
            cut >= 0
            and value.lower().endswith(word)
            and (cut == 0 or value[cut] != word[0] or value[cut - 1] == "_")
        ):
            return False  # the word itself, or ends a name: Password, _secret
    return True


def lenient_name(name: str) -> bool:
    """A password's name: ends in ``pass``/``pwd`` as a word (``DB_PASS``, not ``bypass``), or
    holds one of :data:`LENIENT_WORDS`."""
    name = name.strip("\"'`").lower()
    for end in NET_LENIENT:
        cut = name.rfind(end)
        if (
            cut >= 0
            and not name[cut + len(end) :].strip("_.-")
            and not name[cut - 1 : cut].isalpha()
        ):
            return True
    return any(w in name for w in LENIENT_WORDS)


def wordy(v: str) -> bool:
    """A run of words (``user_profile_settings_v2``), not a generated value."""
    parts = [p for p in v.replace("-", "_").replace(".", "_").replace("/", "_").split("_") if p]
    words = [p for p in parts if p.isalpha() and (p.islower() or p.isupper()) and len(p) >= 3]
    return len(parts) >= 2 and 2 * len(words) >= len(parts)


def generated(v: str) -> bool:
    """What a key or token value looks like: long, random, not a path, URL, date or word run."""
    return (
        10 <= len(v) <= 150
        and entropy(v) >= NET_ENTROPY
        and not v.startswith(NOT_SECRET_PREFIXES)
        and not v.replace(".", "").replace("-", "").replace(":", "").isdigit()
        and not wordy(v)
    )


#: What a name may hold, read back from the value: an identifier, dotted or dashed
#: (``db.password``, ``x-api-key``), and the quotes and backslash around it in code and
#: (escaped) JSON (``"API_KEY"``, ``\\"api_key\\"``).
_NAME_CHARS = frozenset("_.-\"'`\\")


def name_before(text: str, start: int) -> str:
    """The identifier (and its quotes) that ends at ``start``, up to 64 characters: the start
    of the NAME of ``NAME=value`` whose match begins at ``start`` (one of the table's anchors,
    one of the entropy net's words)."""
    i = start
    while i > 0 and start - i < 64 and (text[i - 1].isalnum() or text[i - 1] in _NAME_CHARS):
        i -= 1
    return text[i:start]


#: Words of a secret's name (a flag, a key, a call, a label, a URL parameter).
NAME_WORDS = ("token", "secret", "passw", "passphrase", "pass_phrase", "pwd", "apikey", "api_key",
              "api-key", "credential", "auth", "private", "signing", "login", "key", "pass",
              "session", "cookie", "signature")  # fmt: skip
#: A name's last word that says its value is where a secret is or what it is, not the secret
#: (``password_file``, ``secretName``, ``client_secret_ref``, ``API_KEY_ID``, ``token_type``).
_NOT_VALUE_LAST = frozenset({"file", "path", "dir", "name", "ref", "url", "uri", "arn", "id",
                             "type", "env", "var", "length", "len", "size", "format", "count",
                             "ttl", "endpoint", "host", "stdin", "kind", "mode",
                             "field"})  # fmt: skip
#: A word anywhere in a name that says the value is public (``PublicKey``, ``authorized_keys``).
_PUBLIC_WORDS = frozenset({"public", "pub", "authorized", "publishable", "known"})


def split_name(name: str) -> list[str]:
    """A name's words, lower-cased: split at every character that is not a letter or digit
    and where a lower-case letter meets an upper-case one (``secretName``, ``PublicKey``)."""
    words, word = [], ""
    for i, c in enumerate(name):
        if not c.isalnum():
            words.append(word)
            word = ""
            continue
        if c.isupper() and i and name[i - 1].islower():
            words.append(word)
            word = ""
        word += c.lower()
    return [w for w in (*words, word) if w]


def names_a_value(name: str) -> bool:
    """Whether ``name`` names a secret's value (``--token``, ``signing_secret``), not where it
    is, what it is or a public key (``--token-file``, ``secretName``, ``PublicKey``)."""
    low = name.lower()
    if not any(w in low for w in NAME_WORDS):
        return False
    words = split_name(name)
    if not words:
        return False
    return words[-1] not in _NOT_VALUE_LAST and not any(
        w in _PUBLIC_WORDS or w.startswith("expir") for w in words
    )


def uuid_shaped(v: str) -> bool:
    """``8-4-4-4-12`` hex digits: an id, which the README promises to keep."""
    parts = v.split("-")
    return [len(p) for p in parts] == [8, 4, 4, 4, 12] and all(map(hex_digits, parts))


def hex_digits(v: str) -> bool:
    """Whether ``v`` is hex digits only (a checksum's alphabet)."""
    return bool(v) and all(c in "0123456789abcdefABCDEF" for c in v)


#: A name's words under which a UUID-shaped value is a credential (Heroku's API keys, HubSpot's
#: and Sendbird's tokens are UUIDs), not an id (``idempotency_key``, ``cache_key``).
_CREDENTIAL_WORDS = frozenset({"token", "api", "apikey", "access", "secret", "auth", "private",
                               "signing", "client", "license", "session", "credential",
                               "credentials", "password", "passwd", "pass", "pwd"})  # fmt: skip


def uuid_kept(value: str, name: str) -> bool:
    """Whether ``value`` is a UUID the README keeps: one under a name that is not a
    credential's."""
    return uuid_shaped(value) and not any(w in _CREDENTIAL_WORDS for w in split_name(name))
