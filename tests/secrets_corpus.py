"""Fake secrets as they appear in captured text, and ordinary text that must survive hygiene.

A plain data module shared by the hygiene, capture and end-to-end tests. Every secret is
generated here from a fixed seed: none is real, none is copied from anywhere.

* ``SECRETS``: ``(kind, text)``, the text being a realistic line holding one secret and ``kind``
  the one named in the ``[REDACTED:<kind>]`` marker that must replace it.
* ``SENSITIVE``: ``text -> the part that must never appear`` (nor any 12-character piece of it).
* ``ORDINARY_TEXT``: snippets that look a little like secrets but are not; hygiene keeps them.
"""

from __future__ import annotations

import base64
import random

_rng = random.Random(20261121)
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B64 = _ALNUM + "+/"
_B64URL = _ALNUM + "-_"
_HEX = "0123456789abcdef"


def _r(n: int, alphabet: str = _ALNUM) -> str:
    """``n`` seeded random characters using every character class (digit, upper and lower case)
    the alphabet has, as generated credentials do."""
    classes = [f for f in (str.isdigit, str.isupper, str.islower) if any(map(f, alphabet))]
    while True:
        s = "".join(_rng.choice(alphabet) for _ in range(n))
        if n < 8 or all(any(map(f, s)) for f in classes):
            return s


def _pem(label: str, lines: int) -> tuple[str, str]:
    body = "\n".join(_r(64, _B64) for _ in range(lines)) + "\n" + _r(24, _B64) + "=="
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----", body


def _jwt() -> str:
    def seg(obj: str) -> str:
        return base64.urlsafe_b64encode(obj.encode()).decode().rstrip("=")

    header = seg('{"alg":"HS256","typ":"JWT"}')
    payload = seg(f'{{"sub":"{_r(12)}","name":"Test User","iat":1700000000,"exp":1900000000}}')
    return f"{header}.{payload}.{_r(43, _B64URL)}"


_CASES: list[tuple[str, str, str]] = []  # (kind, template with {s}, secret part)


def _add(kind: str, template: str, secret: str) -> None:
    _CASES.append((kind, template, secret))


_add("anthropic_key", "ANTHROPIC_API_KEY=sk-ant-api03-{s}", _r(93, _B64URL) + "AA")
_add("anthropic_key", "the admin key is sk-ant-admin01-{s} (rotate monthly)", _r(93, _B64URL))
_add("openai_key", "export OPENAI_API_KEY=sk-proj-{s}", _r(156, _B64URL))
_add("openai_key", '{{"model": "gpt-4o", "api_key": "sk-svcacct-{s}"}}', _r(120, _B64URL))
_add("openai_key", 'client = OpenAI(api_key="sk-{s}")', f"{_r(20)}T3BlbkFJ{_r(20)}")
_add("aws_access_key", "aws_access_key_id = AKIA{s}", _r(16, _UPPER_DIGITS))
_add("aws_access_key", '"AccessKeyId": "ASIA{s}",', _r(16, _UPPER_DIGITS))
_add("aws_secret_key", "aws_secret_access_key = {s}", _r(40, _B64))
_add("aws_secret_key", '"SecretAccessKey": "{s}",', _r(40, _B64))
_add("aws_secret_key", "export AWS_SECRET_ACCESS_KEY={s}", _r(40, _B64))
_add("github_token", "git push https://ghp_{s}@github.com/acme/app.git main", _r(36))
_add("github_token", "GH_TOKEN=ghs_{s}", _r(36))
_add("github_token", "fine-grained token: github_pat_11A{s}", _r(79, _ALNUM + "_"))
_add("gitlab_token", 'curl --header "PRIVATE-TOKEN: glpat-{s}" https://gitlab.example.com', _r(20))
_add("gitlab_token", "runner registration GR1348941{s}", _r(20, _B64URL))
_add(
    "slack_token",
    "SLACK_BOT_TOKEN=xoxb-{s}",
    f"{_r(11, '0123456789')}-{_r(13, '0123456789')}-{_r(24)}",
)
_add(
    "slack_token",
    "app-level token xapp-1-{s}",
    f"A0{_r(9, _UPPER_DIGITS)}-{_r(13, '0123456789')}-{_r(64, _HEX)}",
)
_add(
    "slack_webhook",
    "post to https://hooks.slack.com/services/{s} when done",
    f"T0{_r(8, _UPPER_DIGITS)}/B0{_r(8, _UPPER_DIGITS)}/{_r(24)}",
)
_add(
    "google_api_key",
    "GET https://maps.googleapis.com/maps/api/geocode/json?key=AIza{s}&address=x",
    _r(35, _B64URL),
)
_add("stripe_key", 'Stripe.api_key = "sk_live_{s}"', _r(99))
_add("stripe_key", "restricted key rk_live_{s} for reporting", _r(99))
_add("stripe_key", "STRIPE_WEBHOOK_SECRET=whsec_{s}", _r(32))
_add("jwt", "Authorization: Bearer {s}", _jwt())
_add("jwt", "Set-Cookie: session={s}; HttpOnly; Secure", _jwt())
_add(
    "bearer_token",
    'curl -H "Authorization: Bearer {s}" https://api.example.com/v1/me',
    _r(40, _B64URL + "."),
)
_add("bearer_token", '{{"headers": {{"Authorization": "Bearer {s}"}}}}', _r(48))
_add(
    "basic_auth", "Authorization: Basic {s}", base64.b64encode(f"deploy:{_r(18)}".encode()).decode()
)
_add("url_password", "DATABASE_URL=postgres://app:{s}@db.internal:5432/app", _r(24) + "!")
_add("url_password", "redis://default:{s}@cache.example.com:6379/0", _r(32))
_add("secret_assignment", 'DB_PASSWORD="{s}"', f"correct horse {_r(6)} battery staple")
_add("secret_assignment", "password: {s}", _r(16))
_add("secret_assignment", "export PAYMENTS_SERVICE_TOKEN={s}", _r(40, _B64URL))
_add("secret_assignment", "mysql -u root --password={s} shop", _r(18))
_add("secret_assignment", '{{"client_secret": "{s}"}}', _r(32, _B64URL))
_add("npm_token", "//registry.npmjs.org/:_authToken=npm_{s}", _r(36))
_add("huggingface_token", "HF_TOKEN=hf_{s}", _r(34))
_add("sendgrid_key", "SENDGRID=SG.{s}", f"{_r(22, _B64URL)}.{_r(43, _B64URL)}")
_add("pypi_token", "password = pypi-AgEIcHlwaS5vcmc{s}", _r(120, _B64URL))
_rsa, _rsa_body = _pem("RSA PRIVATE KEY", 25)
_ssh, _ssh_body = _pem("OPENSSH PRIVATE KEY", 6)
_ec, _ec_body = _pem("EC PRIVATE KEY", 3)
_p8, _p8_body = _pem("PRIVATE KEY", 15)
_CASES += [
    ("private_key", "cat id_rsa\n{s}\n", _rsa),
    ("private_key", "{s}", _ssh),
    ("private_key", "key.pem:\n{s}\nend of file", _ec),
    ("private_key", '"{s}"', _p8),
]
_PEM_BODIES = {_rsa: _rsa_body, _ssh: _ssh_body, _ec: _ec_body, _p8: _p8_body}

SECRETS: list[tuple[str, str]] = [
    (kind, template.replace("{s}", secret).replace("{{", "{").replace("}}", "}"))
    for kind, template, secret in _CASES
]
#: For each text in SECRETS, the part that must never appear: the generated value itself (for
#: PEM blocks the base64 body; well-known prefixes such as ``sk-ant-api03-`` are not secret).
SENSITIVE: dict[str, str] = {
    text: _PEM_BODIES.get(secret, secret)
    for (_, text), (_, _, secret) in zip(SECRETS, _CASES, strict=True)
}


def sensitive_part(text: str) -> str:
    """The sensitive part of one SECRETS text."""
    return SENSITIVE[text]


ORDINARY_TEXT: list[str] = [
    "Please summarise document 12 and keep dates as DD/MM/YYYY.",
    "Edited /workspace/src/hooks/capture.py: renamed build_event to make_event.",
    "commit 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a (HEAD -> main, origin/main)",
    "request 123e4567-e89b-12d3-a456-426614174000 finished in 35 ms",
    "for key, value in sorted(d.items(), key=lambda kv: kv[0]):",
    'response = client.messages.create(max_tokens=4096, temperature=0.2, model="claude")',
    "The keyboard shortcut is Ctrl+K; the password policy needs 12 characters.",
    "Run `ssh-keygen -t ed25519 -C me@example.com` to create a new key pair.",
    "See https://docs.python.org/3/library/re.html#re.Match.lastgroup for details.",
    "Bearer tokens go in the Authorization header; basic auth is disabled.",
    "The task-list shows risk-assessment, desk-top and whisk-based items.",
    "Asia-Pacific revenue grew 4%; AKIRA and ACCAD signed in Ghent.",
    '{"sort_keys": true, "indent": 2, "primary_key": "id", "input_tokens": 1532}',
    "def login(username: str, password: str) -> bool:",
    "password = input('Password: ')  # never stored",
    "token = tokens[i]; secret = os.environ['APP_SECRET']",
    "scikit-learn (sk-learn-compatible-estimator-wrapper) and numpy 2.1 are installed.",
    "/home/agent/.config/gh/hosts.yml and C:\\Users\\me\\AppData\\Local\\Temp",
    "Invoice 2026-11-02 total 1,234.50 EUR, paid by transfer.",
    "The meeting moved to 10:30; bring the printed agenda.",
    "git log --oneline | head -n 5 && make test",
    "SELECT id, title FROM notes WHERE archived = 0 ORDER BY id DESC LIMIT 20;",
    "It's no secret: the team shipped early.",
    "Use `export PATH=$HOME/.local/bin:$PATH` and `API_KEY=$API_KEY` in CI.",
]
