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
from typing import Any

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
# Forms issue 13 found stored verbatim (and sent to the Bridge).
_LOWER_DIGITS = "abcdefghijklmnopqrstuvwxyz0123456789"
_add("twilio_api_key", "twilio api key SK{s} for the SMS webhook", _r(32, _HEX))
_add("digitalocean_pat", "doctl auth init -t dop_v1_{s}", _r(64, _HEX))
_add("shopify_access_token", "X-Shopify-Access-Token: shpat_{s}", _r(32, _HEX))
_add(
    "discord_bot_token",
    "discord client.run('{s}')",
    f"M{_r(23, _B64URL)}.{_r(6, _B64URL)}.{_r(38, _B64URL)}",
)
_add(
    "telegram_bot_token",
    "curl https://api.telegram.org/bot{s}/getMe",
    f"{_r(10, '0123456789')}:AA{_r(33, _B64URL)}",
)
_add("mailgun_key", "curl -s --user api:key-{s} https://api.mailgun.net/v3", _r(32, _HEX))
_add("google_oauth_token", "access token: ya29.{s}", _r(120, _B64URL))
_add("google_client_secret", '{{"client_secret": "GOCSPX-{s}"}}', _r(28, _B64URL))
_add("atlassian_api_token", "jira token ATATT3{s}", _r(186, _ALNUM + "_-"))
_add("linear_api_key", "LINEAR=lin_api_{s}", _r(40, _LOWER_DIGITS))
_add("grafana_service_account_token", "grafana: glsa_{s}", f"{_r(32)}_{_r(8, _HEX)}")
_add("databricks_api_token", "databricks configure --token dapi{s}", _r(32, _HEX))
_add("postman_api_token", "postman: PMAK-{s}", f"{_r(24, _HEX)}-{_r(34, _HEX)}")
_add("tailscale_key", "tailscale up --authkey tskey-auth-{s}", f"k{_r(10)}CNTRL-{_r(33)}")
_add("notion_api_token", "notion: ntn_{s}", f"{_r(11, '0123456789')}{_r(35)}")
_add("doppler_token", "DOPPLER=dp.st.prd.{s}", _r(43))
_add("age_secret_key", "age key: AGE-SECRET-KEY-1{s}", _r(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"))
_add(
    "private_key",
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 2\n"
    "AAAAC3NzaC1lZDI1NTE5AAAAI\nPrivate-Lines: 1\n{s}\nPrivate-MAC: 3f2a9c1e5b7d4a6f",
    _r(44, _B64),
)
_add(
    "secret_assignment",
    '{{"auths": {{"ghcr.io": {{"auth": "{s}"}}}}}}',
    base64.b64encode(f"me:{_r(20)}".encode()).decode(),
)
_add("netrc_password", "machine api.example.com login deploy password {s}", _r(20))
_add("basic_auth", "curl -u admin:{s} https://api.example.com/status", _r(18))
_add("mysql_password", "mysql -u root -p{s} -h db.internal shop", _r(16))
_add("sshpass_password", "sshpass -p '{s}' ssh deploy@10.0.0.5", _r(14))
_add("openssl_password", "openssl pkcs12 -in cert.p12 -passin pass:{s} -nodes", _r(16))
_add("cookie", "Cookie: sessionid={s}; csrftoken=abc", _r(32, _LOWER_DIGITS))
_add("secret_assignment", "export DB_PASS={s}", _r(16))
_add("secret_assignment", "SMTP_PWD={s}", _r(14))
_add("secret_assignment", '{{"user": "deploy", "pass": "{s}"}}', _r(14))
_add(
    "azure_sas_signature",
    "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2026-01-01&sp=r&sig={s}",
    _r(43, _ALNUM + "%") + "%3D",
)
_add(
    "slack_webhook",
    '{{"url": "https:\\/\\/hooks.slack.com\\/services\\/{s}"}}',
    f"T0{_r(8, _UPPER_DIGITS)}\\/B0{_r(8, _UPPER_DIGITS)}\\/{_r(24)}",
)
_add("github_token", "\x1b[32mghp_{s}\x1b[0m printed in green", _r(36))
_add("openai_key", "key: \x1b[1;33msk-proj-{s}\x1b[0m", _r(120, _B64URL))
# Forms issue 20 found stored and sent to the Bridge, and their neighbours.
_DIG = "0123456789"
_LOWER_HEX = _HEX
_WORDS = (
    "amber",
    "lantern",
    "orbit",
    "velvet",
    "quarry",
    "meadow",
    "cobalt",
    "harbor",
    "tundra",
    "pepper",
    "saddle",
    "walnut",
    "glacier",
    "mosaic",
    "ripple",
    "canyon",
    "falcon",
    "timber",
)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _uuid() -> str:
    return f"{_r(8, _HEX)}-{_r(4, _HEX)}-4{_r(3, _HEX)}-a{_r(3, _HEX)}-{_r(12, _HEX)}"


# URL passwords with "#", "?", "/", "%40", an unencoded "@", and JSON's escaped slash.
_add("url_password", "DATABASE_URL=postgres://app:{s}@db.internal:5432/app", f"{_r(10)}#{_r(8)}")
_add(
    "url_password",
    "mongodb+srv://admin:{s}@cluster0.example.net/app?w=majority",
    f"{_r(9)}?{_r(8)}",
)
_add("url_password", "amqp://guest:{s}@mq.internal:5672/vhost", f"{_r(10)}/{_r(8)}")
_add("url_password", "postgresql://report:{s}@10.0.0.7/report", f"{_r(8)}%40{_r(6)}%23{_r(4)}")
_add("url_password", '{{"dsn": "https:\\/\\/deploy:{s}@registry.example.com\\/v2\\/"}}', _r(18))
_add("url_password", "redis://default:{s}@cache.internal:6379/1", f"{_r(8)}@{_r(8)}")
_add("url_password", "lftp ftp://backup:{s}@files.example.com/dumps/", _r(16))
_add("url_password", "git clone https://oauth2:{s}@gitlab.example.com/team/app.git", _r(24))
# A key split over a tool call's name and value fields.
_add("secret_assignment", '{{"header_name": "X-Api-Key", "header_value": "{s}"}}', _r(32))
_add("secret_assignment", '{{"name":"API_TOKEN","value":"{s}"}}', _r(40))
_add("secret_assignment", "env:\n  - name: STRIPE_SECRET\n    value: {s}\n", _r(30))
_add("secret_assignment", '[{{"Name": "DB_PASSWORD", "Value": "{s}"}}]', _r(18))
_add(
    "secret_assignment",
    '{{"body": "{{\\"name\\":\\"SESSION_SECRET\\",\\"value\\":\\"{s}\\"}}"}}',
    _r(32),
)
_add(
    "secret_assignment",
    '{{"args": ["-H", "X-Api-Key: {s}", "https://api.example.com/v1"]}}',
    _r(32),
)
_add("secret_assignment", 'curl -H "X-Auth-Token: {s}" https://api.example.com/v1/items', _r(40))
_add("secret_assignment", '{{"key": "apiKey", "value": "{s}", "type": "text"}}', _r(36))
_add("secret_assignment", "http GET api.example.com/v2/me apikey:{s}", _r(32))
# Secrets wrapped in base64 and fed to a decoder; base64 of user:password after Basic.
_add("encoded_secret", "echo {s} | base64 -d", _b64(f"sk-ant-api03-{_r(93, _B64URL)}AA"))
_add(
    "encoded_secret",
    "echo '{s}' | base64 --decode > ~/.netrc",
    _b64(f"machine api.example.com login deploy password {_r(16)}"),
)
_add(
    "encoded_secret", "printf %s {s} | base64 -d | xargs -I{{}} curl -H 'X: {{}}' api", _b64(_r(32))
)
_add(
    "encoded_secret",
    "python -c \"import base64; print(base64.b64decode('{s}'))\"",
    _b64(f"ghp_{_r(36)}"),
)
_add("encoded_secret", "const token = atob('{s}');", _b64(f"xoxb-{_r(12, _DIG)}-{_r(24)}"))
_add("basic_auth", '{{"headers": {{"Authorization": "Basic {s}"}}}}', _b64(f"admin:{_r(16)}"))
_add(
    "basic_auth", "curl -H 'authorization: basic {s}' https://ci.example.com", _b64(f"ci:{_r(20)}")
)
# Passwords in prose.
_add("secret_assignment", "the wifi password is {s}", f"{_r(11)}!")
_add("secret_assignment", "my password: {s}", _r(14))
_add("secret_assignment", "The PIN is {s}.", _r(8, _DIG))
_add(
    "secret_assignment",
    'the passphrase is "{s}"',
    f"{_rng.choice(_WORDS)} {_r(5)} {_rng.choice(_WORDS)} {_r(4)}",
)
_add("secret_assignment", "The password for the router is {s}. Change it soon.", _r(12))
_add("secret_assignment", "Login as admin; the password is now {s}", _r(13))
_add("secret_assignment", "ssh key passphrase: {s}", _r(14))
_add("secret_assignment", "Your new passcode is {s}", _r(12))
_add("private_key", "my wallet's private key is 0x{s}", _r(64, _HEX))
_add("mnemonic", "seed phrase: {s}", " ".join(_rng.choice(_WORDS) for _ in range(12)))
# Fullwidth punctuation and letters.
_add("secret_assignment", "password＝{s}", _r(14))
_add("secret_assignment", "api_key：{s}", _r(32))
_add("secret_assignment", "ＡＰＩ＿ＫＥＹ＝{s}", _r(32))
_add("secret_assignment", "secret　：　{s}", _r(20))
# Chat platforms: webhooks and bot tokens.
_add("discord_webhook", "https://discord.com/api/webhooks/1234567890123456789/{s}", _r(68, _B64URL))
_add(
    "discord_webhook",
    "curl -X POST https://discordapp.com/api/webhooks/987654321098765432/{s}",
    _r(68, _B64URL),
)
_add(
    "telegram_bot_token",
    "https://api.telegram.org/bot{s}/sendMessage?chat_id=42",
    f"{_r(10, _DIG)}:B{_r(34, _B64URL)}",
)
_add("telegram_bot_token", "telegram bot token {s}", f"{_r(10, _DIG)}:{_r(35, _B64URL)}")
_add(
    "microsoft_teams_webhook",
    "https://acme.webhook.office.com/webhookb2/{s}",
    f"{_uuid()}@{_uuid()}/IncomingWebhook/{_r(32, _HEX)}/{_uuid()}",
)
_add(
    "teams_webhook",
    "POST https://outlook.office.com/webhook/{s}",
    f"{_uuid()}@{_uuid()}/IncomingWebhook/{_r(32, _HEX)}/{_uuid()}",
)
_add("chat_webhook", "mattermost: https://chat.example.com/hooks/{s}", _r(26, _LOWER_DIGITS))
_add("chat_webhook", "https://rocket.example.com/hooks/{s}", f"{_r(17)}/{_r(48)}")
_add(
    "secret_assignment",
    "https://chat.googleapis.com/v1/spaces/AAAA{x}/messages?key=AIza{k}&token={s}".replace(
        "{x}", _r(7)
    ).replace("{k}", _r(35, _B64URL)),
    _r(43, _B64URL),
)
_add("slack_token", "refresh: xoxe-1-{s}", _r(146))
_add("slack_config_access_token", "SLACK_CONFIG_TOKEN=xoxe.xoxp-1-{s}", _r(163))
# Private keys that are not PEM.
_pgp, _pgp_body = _pem("PGP PRIVATE KEY BLOCK", 8)
_add(
    "private_key",
    '{{"ppk": "PuTTY-User-Key-File-3: ssh-rsa\\nEncryption: none\\nPrivate-Lines: 1\\n{s}\\n'
    'Private-MAC: ab12cd34"}}',
    _r(64, _B64),
)
_add(
    "age_secret_key",
    "# created: 2026-01-01\nAGE-SECRET-KEY-1{s}",
    _r(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
)
_add(
    "private_key",
    '{{"kty":"EC","crv":"P-256","x":"' + _r(43, _B64URL) + '","d":"{s}"}}',
    _r(43, _B64URL),
)
_add(
    "private_key",
    '{{"kty":"RSA","e":"AQAB","n":"' + _r(60, _B64URL) + '","d":"{s}"}}',
    _r(342, _B64URL),
)
_add("private_key", '{{"kty":"oct","k":"{s}","alg":"HS256"}}', _r(43, _B64URL))
_add(
    "secret_assignment", "[Interface]\nPrivateKey = {s}\nAddress = 10.0.0.2/32", _r(43, _B64) + "="
)
_add("secret_assignment", "[Peer]\nPresharedKey = {s}\nAllowedIPs = 0.0.0.0/0", _r(43, _B64) + "=")
_add("private_key", "ETH signing key is 0x{s}", _r(64, _HEX))
_add(
    "private_key",
    "solana keypair: {s}",
    "[" + ",".join(str(_rng.randrange(256)) for _ in range(64)) + "]",
)
_add("secret_assignment", "export WALLET_PRIVATE_KEY={s}", _r(64, _HEX))
# Newer vendor prefixes.
_add("perplexity_api_key", "PERPLEXITY_API_KEY=pplx-{s}", _r(48))
_add("groq_api_key", "GROQ_API_KEY=gsk_{s}", _r(52))
_add("xai_api_key", "client = Client(api_key='xai-{s}')", _r(80))
_add("nvidia_api_key", "nvapi-{s}", _r(64, _B64URL))
_add("replicate_api_token", "REPLICATE_API_TOKEN=r8_{s}", _r(37))
_add("tavily_api_key", "tavily: tvly-dev-{s}", _r(32))
_add("sentry_org_token", "SENTRY_AUTH_TOKEN=sntrys_{s}", "eyJpYXQiOjE3" + _r(100, _ALNUM + "+/"))
_add("fireworks_api_key", "fireworks: fw_{s}", _r(24))
_add("supabase_token", "supabase login --token sbp_{s}", _r(40, _HEX))
_add("supabase_token", "SUPABASE_SECRET_KEY=sb_secret_{s}", _r(32, _B64URL))
_add("vercel_token", "vercel deploy --token vcp_{s}", _r(56))
_add("cloudflare_api_token", "CLOUDFLARE_API_TOKEN=cfut_{s}", _r(46))
_add("docker_hub_token", "docker login -u acme -p dckr_pat_{s}", _r(27, _B64URL))
_add("figma_token", "X-Figma-Token: figd_{s}", _r(40, _B64URL))
_add("posthog_personal_key", "phx_{s}", _r(43))
_add("langsmith_api_key", "LANGSMITH_API_KEY=lsv2_pt_{s}", f"{_r(32, _HEX)}_{_r(10, _HEX)}")
_add("pinecone_api_key", "pc = Pinecone(api_key='pcsk_{s}')", f"{_r(6)}_{_r(63)}")
_add("resend_api_key", "RESEND_API_KEY=re_{s}", f"{_r(8)}_{_r(24)}")
_add("elevenlabs_api_key", "xi-api-key: sk_{s}", _r(48, _HEX))
_add("openai_key", "OPENROUTER_API_KEY=sk-or-v1-{s}", _r(64, _HEX))
_add("anthropic_key", "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-{s}", _r(95, _B64URL))
_add("google_refresh_token", "refresh_token: 1//0{s}", _r(100, _B64URL))
_add("mapbox_secret_token", "MAPBOX=sk.eyJ1IjoiYWNtZSIsImEiOiJ{s}", f"{_r(20)}.{_r(22, _B64URL)}")
_add("digitalocean_access_token", "doctl auth init --access-token doo_v1_{s}", _r(64, _HEX))
_add("mistral_api_key", "mistral: {s}", _r(32))
# gitleaks' provider-name and keyword-gated rules.
_add("new_relic_user_api_key", "new_relic: NRAK-{s}", _r(27, _UPPER_DIGITS))
_add("heroku_api_key", "heroku: {s}", _uuid())
_add("datadog_access_token", "datadog = {s}", _r(40, _LOWER_DIGITS))
_add("cloudflare_global_api_key", "cloudflare: {s}", _r(37, _HEX))
_add("algolia_api_key", "algolia admin: {s}", _r(32, _LOWER_DIGITS))
_add("okta_access_token", "Okta: 00{s}", _r(40))
_add("vault_service_token", "vault login s.{s}", _r(24))
_add("vault_service_token", "VAULT_TOKEN=hvs.{s}", _r(95, _B64URL))
_add("sourcegraph_access_token", "sourcegraph instance sg.example.com uses {s}", _r(40, _HEX))
_add("facebook_access_token", "facebook app token 1234567890123456|{s}", _r(30, _B64URL))
_add(
    "kubernetes_secret_yaml",
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  config.json: {s}\n",
    _b64(_r(16)),
)
_add("kubernetes_secret_yaml", "kind: Secret\nstringData:\n  upstream: {s}\n", _r(24))
_add("mailchimp_api_key", "mailchimp: {s}", f"{_r(32, _HEX)}-us21")
_add("twitch_api_token", "twitch: {s}", _r(30, _LOWER_DIGITS))
_rsa, _rsa_body = _pem("RSA PRIVATE KEY", 25)
_ssh, _ssh_body = _pem("OPENSSH PRIVATE KEY", 6)
# Found leaking after the corpus was first built: passwords given as CLI flags.
_add("cli_password", "docker login -u me -p {s} registry.example.com", _r(15))
_add("cli_password", "podman login --password {s} quay.io", _r(18))
_add("cli_password", "redis-cli -h cache -a {s} ping", _r(12))
_add("cli_password", "openssl enc -aes256 -in notes.txt -out notes.enc -k {s}", _r(11))
_ec, _ec_body = _pem("EC PRIVATE KEY", 3)
_p8, _p8_body = _pem("PRIVATE KEY", 15)
_CASES += [
    ("private_key", "cat id_rsa\n{s}\n", _rsa),
    ("private_key", "{s}", _ssh),
    ("private_key", "key.pem:\n{s}\nend of file", _ec),
    ("private_key", '"{s}"', _p8),
]
_PEM_BODIES = {_rsa: _rsa_body, _ssh: _ssh_body, _ec: _ec_body, _p8: _p8_body}


# Issue 33: gitleaks' default rules (config/gitleaks.toml of v8.30.0+27, MIT licence), one
# form for each, whatever our rules already catch: (rule id, where it is written, the secret
# as gitleaks' generator writes its true examples in cmd/generate/config/rules/*.go: a
# provider's prefix and secrets.NewSecret of a pattern). The value is generated here from the
# pattern with a fixed seed. Places rotate: gitleaks' own sample contexts, and those its rules
# missed (after a token a full stop, a comma, ")", "]", "</", "&"; a call's comma, PHP's
# "??=", "+="). A provider-name rule's form names the provider, as gitleaks requires. Left
# out: pkcs12-file (a rule on file names) and private-key (the PEM blocks above).
_UUID = "[a-f0-9]{8}-[a-f0-9]{4}-4[a-f0-9]{3}-a[a-f0-9]{3}-[a-f0-9]{12}"
_GITLEAKS_FORMS: tuple[tuple[str, str, str | None], ...] = (
    (
        "1password-secret-key",
        "export OP_SECRET_KEY={s}",
        "A3-[A-Z0-9]{6}-[A-Z0-9]{11}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
    ),
    (
        "1password-service-account-token",
        "The 1password token is {s}.",
        "ops_eyJ[a-zA-Z0-9+/]{250,}={0,3}",
    ),
    ("adafruit-api-key", "export ADAFRUIT_API_KEY={s}", "[a-z0-9_-]{32}"),
    ("adobe-client-id", 'adobe_api_key: "{s}"', "[a-f0-9]{32}"),
    ("adobe-client-secret", "<adobeToken>{s}</adobeToken>", "p8e-[a-zA-Z0-9]{32}"),
    ("age-secret-key", "tokens: [{s}]", "AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("airtable-api-key", "<airtableToken>{s}</airtableToken>", "[a-z0-9]{17}"),
    (
        "airtable-personnal-access-token",
        "Use {s}, then restart the worker.",
        "pat[a-z0-9]{14}\\.[a-f0-9]{64}",
    ),
    ("algolia-api-key", 'System.setProperty("ALGOLIA_TOKEN", "{s}")', "[a-f0-9]{32}"),
    ("alibaba-access-key-id", 'client = ALIBABAClient("{s}")', "LTAI[a-zA-Z0-9]{20}"),
    ("alibaba-secret-key", "ALIBABA_TOKEN={s}, rotated monthly", "[a-z0-9]{30}"),
    (
        "anthropic-admin-api-key",
        '{{"anthropic": {{"token": "{s}"}}}}',
        "sk\\-ant\\-admin01\\-[a-z0-9_-]{93}AA",
    ),
    (
        "anthropic-api-key",
        'curl "https://api.example.com/v1?token={s}&page=2"',
        "sk\\-ant\\-api03\\-[a-z0-9_-]{93}AA",
    ),
    ("artifactory-api-key", "key ({s}) expires tomorrow", "AKCp[A-Za-z0-9]{69}"),
    ("artifactory-reference-token", "artifactoryToken,{s},prod", "cmVmd[A-Za-z0-9]{59}"),
    ("asana-client-id", 'asanaToken := "{s}"', "[0-9]{16}"),
    ("asana-client-secret", '{{"asana_token": "{s}"}}', "[a-z0-9]{32}"),
    ("atlassian-api-token", '$atlassianToken ??= "{s}";', "[a-z0-9]{20}[a-f0-9]{4}"),
    (
        "authress-service-client-access-key",
        "echo {s} | authress login --with-token",
        "sc_[a-z0-9]{20}\\.[a-z0-9]{5}\\.acc_[a-z0-9]{20}\\.[a-zA-Z0-9+/_=-]{60}",
    ),
    ("aws-access-token", "# aws: {s}", "AKIA[A-Z2-7]{16}"),
    (
        "aws-amazon-bedrock-api-key-long-lived",
        "export BEDROCK_TOKEN={s}",
        "ABSKQmVkcm9ja0FQSUtleS1[a-z0-9]{108}=",
    ),
    (
        "aws-amazon-bedrock-api-key-short-lived",
        "The amazonbedrockapikeyshortlived token is {s}.",
        "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[a-zA-Z0-9+/]{600}==",
    ),
    (
        "azure-ad-client-secret",
        "<azureToken>{s}</azureToken>",
        "[a-zA-Z0-9_~.]{3}[0-9]Q~[a-zA-Z0-9_~.-]{34}",
    ),
    ("beamer-api-token", "beamerToken,{s},prod", "b_[a-z0-9=_\\-]{44}"),
    ("bitbucket-client-id", 'BITBUCKET_SECRET += "{s}"', "[a-z0-9]{32}"),
    ("bitbucket-client-secret", 'var bitbucketKey = "{s}"; // do not commit', "[a-z0-9]{64}"),
    ("bittrex-access-key", "docker run -e BITTREX_KEY={s} app", "[a-z0-9]{32}"),
    ("bittrex-secret-key", "export BITTREX_API_KEY={s}", "[a-z0-9]{32}"),
    ("cisco-meraki-api-key", 'meraki_api_key: "{s}"', "[a-f0-9]{40}"),
    ("clickhouse-cloud-api-secret-key", "tokens: [{s}]", "4b1d[A-Za-z0-9]{38}"),
    ("clojars-api-token", "Use {s}, then restart the worker.", "CLOJARS_[a-z0-9]{60}"),
    ("cloudflare-api-key", "<cloudflareToken>{s}</cloudflareToken>", "[a-z0-9_-]{40}"),
    ("cloudflare-global-api-key", 'System.setProperty("CLOUDFLARE_TOKEN", "{s}")', "[a-f0-9]{37}"),
    (
        "cloudflare-origin-ca-key",
        'client = CLOUDFLAREClient("{s}")',
        "v1\\.0-[a-f0-9]{24}-[a-f0-9]{146}",
    ),
    ("codecov-access-token", "CODECOV_TOKEN={s}, rotated monthly", "[a-z0-9]{32}"),
    ("cohere-api-token", 'cohereToken := "{s}"', "[a-zA-Z0-9]{40}"),
    ("coinbase-access-token", '{{"coinbase_token": "{s}"}}', "[a-z0-9_-]{64}"),
    ("confluent-access-token", '$confluentToken ??= "{s}";', "[a-z0-9]{16}"),
    ("confluent-secret-key", "confluentToken,{s},prod", "[a-z0-9]{64}"),
    ("contentful-delivery-api-token", 'CONTENTFUL_SECRET += "{s}"', "[a-z0-9]{43}"),
    (
        "curl-auth-header",
        "curl --header 'X-Api-Key: {s}' https://api.example.com/v1/items",
        "[a-zA-Z0-9]{32}",
    ),
    ("curl-auth-user", 'curl -u "{s}:" https://api.example.com/v1/charges', "[a-zA-Z0-9]{28}"),
    ("databricks-api-token", '{{"databricks": {{"token": "{s}"}}}}', "dapi[a-f0-9]{32}"),
    ("datadog-access-token", 'var datadogKey = "{s}"; // do not commit', "[a-z0-9]{40}"),
    (
        "defined-networking-api-token",
        "docker run -e DNKEY_KEY={s} app",
        "dnkey\\-[a-z0-9=_\\-]{26}\\-[a-z0-9=_\\-]{52}",
    ),
    (
        "digitalocean-access-token",
        'curl "https://api.example.com/v1?token={s}&page=2"',
        "doo_v1_[a-f0-9]{64}",
    ),
    ("digitalocean-pat", "key ({s}) expires tomorrow", "dop_v1_[a-f0-9]{64}"),
    ("digitalocean-refresh-token", "doToken,{s},prod", "dor_v1_[a-f0-9]{64}"),
    ("discord-api-token", "export DISCORD_API_KEY={s}", "[a-f0-9]{64}"),
    ("discord-client-id", 'discord_api_key: "{s}"', "[0-9]{18}"),
    ("discord-client-secret", "<discordToken>{s}</discordToken>", "[0-9]{32}"),
    ("doppler-api-token", "echo {s} | doppler login --with-token", "dp\\.pt\\.[a-z0-9]{43}"),
    ("droneci-access-token", 'System.setProperty("DRONECI_TOKEN", "{s}")', "[a-z0-9]{32}"),
    ("dropbox-api-token", "DROPBOX_TOKEN={s}, rotated monthly", "[a-z0-9]{15}"),
    (
        "dropbox-long-lived-api-token",
        'dropboxToken := "{s}"',
        "[a-z0-9]{11}AAAAAAAAAA[a-z0-9_-]{43}",
    ),
    ("dropbox-short-lived-api-token", '{{"dropbox_token": "{s}"}}', "sl\\.[a-z0-9_-]{135}"),
    ("duffel-api-token", "# duffel: {s}", "duffel_test_[a-z0-9=_\\-]{43}"),
    ("dynatrace-api-token", "export DYNATRACE_TOKEN={s}", "dt0c01\\.[a-z0-9]{24}\\.[a-z0-9]{64}"),
    ("easypost-api-token", "The ezak token is {s}.", "EZAK[a-zA-Z0-9]{54}"),
    ("easypost-test-api-token", "<eztkToken>{s}</eztkToken>", "EZTK[a-zA-Z0-9]{54}"),
    ("etsy-access-token", '$etsyToken ??= "{s}";', "[a-z0-9]{24}"),
    ("facebook-access-token", "facebook app tokens: [{s}]", "[0-9]{16}\\|[a-zA-Z0-9_-]{32}"),
    ("facebook-page-access-token", "Use {s}, then restart the worker.", "EAAM[a-zA-Z0-9]{120}"),
    ("facebook-secret", "facebookToken,{s},prod", "[a-f0-9]{32}"),
    ("fastly-api-token", 'FASTLY_SECRET += "{s}"', "[a-z0-9=_\\-]{32}"),
    ("finicity-api-token", 'var finicityKey = "{s}"; // do not commit', "[a-f0-9]{32}"),
    ("finicity-client-secret", "docker run -e FINICITY_KEY={s} app", "[a-z0-9]{20}"),
    ("finnhub-access-token", "export FINNHUB_API_KEY={s}", "[a-z0-9]{20}"),
    ("flickr-access-token", 'flickr_api_key: "{s}"', "[a-z0-9]{32}"),
    (
        "flutterwave-encryption-key",
        'client = FLUTTERWAVEPUBKEYClient("{s}")',
        "FLWSECK_TEST\\-[a-f0-9]{12}",
    ),
    (
        "flutterwave-public-key",
        '{{"flutterwavepubkey": {{"token": "{s}"}}}}',
        "FLWPUBK_TEST\\-[a-f0-9]{32}\\-X",
    ),
    (
        "flutterwave-secret-key",
        'curl "https://api.example.com/v1?token={s}&page=2"',
        "FLWSECK_TEST\\-[a-f0-9]{32}\\-X",
    ),
    ("flyio-access-token", "key ({s}) expires tomorrow", "fo1_[\\w-]{43}"),
    ("frameio-api-token", "frameioToken,{s},prod", "fio\\-u\\-[a-z0-9=_\\-]{64}"),
    ("freemius-secret-key", "'secret_key' => '{s}',", "sk_[a-zA-Z0-9]{29}"),
    ("freshbooks-access-token", "<freshbooksToken>{s}</freshbooksToken>", "[a-z0-9]{64}"),
    ("gcp-api-key", "echo {s} | gcp login --with-token", "AIza[\\w-]{35}"),
    ("generic-api-key", 'System.setProperty("PAYMENTS_TOKEN", "{s}")', "[a-zA-Z0-9]{32}"),
    ("github-app-token", "# github: {s}", "ghs_[a-z0-9]{36}"),
    ("github-fine-grained-pat", "export GITHUB_TOKEN={s}", "github_pat_[a-z0-9]{82}"),
    ("github-oauth", "The github token is {s}.", "gho_[a-z0-9]{36}"),
    ("github-pat", "<githubToken>{s}</githubToken>", "ghp_[a-z0-9]{36}"),
    ("github-refresh-token", "tokens: [{s}]", "ghr_[a-z0-9]{36}"),
    (
        "gitlab-cicd-job-token",
        "Use {s}, then restart the worker.",
        "glcbt\\-[a-z0-9]{5}_[a-z0-9]{20}",
    ),
    ("gitlab-deploy-token", 'client = GITLABClient("{s}")', "gldt\\-[a-z0-9]{20}"),
    (
        "gitlab-feature-flag-client-token",
        '{{"gitlab": {{"token": "{s}"}}}}',
        "glffct\\-[a-z0-9]{20}",
    ),
    (
        "gitlab-feed-token",
        'curl "https://api.example.com/v1?token={s}&page=2"',
        "glft\\-[a-z0-9]{20}",
    ),
    ("gitlab-incoming-mail-token", "key ({s}) expires tomorrow", "glimt\\-[a-z0-9]{25}"),
    ("gitlab-kubernetes-agent-token", "gitlabToken,{s},prod", "glagent\\-[a-z0-9]{50}"),
    ("gitlab-oauth-app-secret", "echo {s} | gitlab login --with-token", "gloas\\-[a-z0-9]{64}"),
    ("gitlab-pat", "# gitlab: {s}", "glpat\\-[a-z0-9]{20}"),
    (
        "gitlab-pat-routable",
        "export GITLAB_TOKEN={s}",
        "glpat\\-[a-z0-9]{27}\\.[a-z0-9]{2}[a-z0-9]{7}",
    ),
    ("gitlab-ptt", "The gitlab token is {s}.", "glptt\\-[a-f0-9]{40}"),
    ("gitlab-rrt", "<gitlabToken>{s}</gitlabToken>", "GR1348941[a-z0-9]{20}"),
    ("gitlab-runner-authentication-token", "tokens: [{s}]", "glrt\\-[a-z0-9]{20}"),
    (
        "gitlab-runner-authentication-token-routable",
        "Use {s}, then restart the worker.",
        "glrt\\-t[0-9]{1}_[a-z0-9]{27}\\.[a-z0-9]{2}[a-z0-9]{7}",
    ),
    ("gitlab-scim-token", 'client = GITLABClient("{s}")', "glsoat\\-[a-z0-9]{20}"),
    ("gitlab-session-cookie", '{{"gitlab": {{"token": "{s}"}}}}', "_gitlab_session=[a-z0-9]{32}"),
    ("gitter-access-token", 'System.setProperty("GITTER_TOKEN", "{s}")', "[a-z0-9_-]{40}"),
    ("gocardless-api-token", "GOCARDLESS_TOKEN={s}, rotated monthly", "live_[a-z0-9=_\\-]{40}"),
    (
        "grafana-api-key",
        'curl "https://api.example.com/v1?token={s}&page=2"',
        "eyJrIjoi[a-z0-9]{70}",
    ),
    ("grafana-cloud-api-token", "key ({s}) expires tomorrow", "glc_[a-z0-9]{32}"),
    (
        "grafana-service-account-token",
        "grafanaserviceaccounttokenToken,{s},prod",
        "glsa_[a-z0-9]{32}_[a-f0-9]{8}",
    ),
    (
        "harness-api-key",
        "echo {s} | harness login --with-token",
        "pat\\.[a-z0-9]{22}\\.[a-z0-9]{24}\\.[a-z0-9]{20}",
    ),
    (
        "hashicorp-tf-api-token",
        "# hashicorptoken: {s}",
        "[a-f0-9]{14}\\.atlasv1\\.[a-z0-9=_\\-]{60,70}",
    ),
    ("hashicorp-tf-password", 'administrator_login_password = "{s}"', "[a-zA-Z0-9]{16}"),
    (
        "heroku-api-key",
        'herokuToken := "{s}"',
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    ),
    ("heroku-api-key-v2", "export HEROKU_TOKEN={s}", "\\b(HRKU-AA[0-9a-zA-Z_-]{58})\\b"),
    (
        "hubspot-api-key",
        '{{"hubspot_token": "{s}"}}',
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    ),
    ("huggingface-access-token", "The huggingface token is {s}.", "hf_[a-zA-Z]{34}"),
    (
        "huggingface-organization-api-token",
        "<huggingfaceToken>{s}</huggingfaceToken>",
        "api_org_[a-zA-Z]{34}",
    ),
    ("infracost-api-token", "tokens: [{s}]", "ico\\-[A-Za-z0-9]{32}"),
    ("intercom-api-key", '$intercomToken ??= "{s}";', "[a-z0-9=_\\-]{60}"),
    ("intra42-client-secret", "Use {s}, then restart the worker.", "s-s4t2ud-[a-f0-9]{64}"),
    ("jfrog-api-key", "artifactoryToken,{s},prod", "[a-z0-9]{73}"),
    ("jfrog-identity-token", 'JFROG_SECRET += "{s}"', "[a-z0-9]{64}"),
    (
        "jwt",
        'client = JWTClient("{s}")',
        r"ey[a-zA-Z0-9]{30}\.ey[a-zA-Z0-9_-]{60}\.[a-zA-Z0-9_-]{43}",
    ),
    ("jwt-base64", "token: {s}", None),
    (
        "kraken-access-token",
        'var krakenKey = "{s}"; // do not commit',
        "[a-z0-9\\/=_\\+\\-]{80,90}",
    ),
    ("kubernetes-secret-yaml", "kind: Secret\ndata:\n  token: {s}\n", "[a-zA-Z0-9+/]{40}=="),
    ("kucoin-access-token", "docker run -e KUCOIN_KEY={s} app", "[a-f0-9]{24}"),
    (
        "kucoin-secret-key",
        "export KUCOIN_API_KEY={s}",
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    ),
    ("launchdarkly-access-token", 'launchdarkly_api_key: "{s}"', "[a-z0-9=_\\-]{40}"),
    ("linear-api-key", '{{"linear": {{"token": "{s}"}}}}', "lin_api_[a-z0-9]{40}"),
    ("linear-client-secret", "<linearToken>{s}</linearToken>", "[a-f0-9]{32}"),
    ("linkedin-client-id", 'System.setProperty("LINKEDIN_TOKEN", "{s}")', "[a-z0-9]{14}"),
    ("linkedin-client-secret", "LINKEDIN_TOKEN={s}, rotated monthly", "[a-z0-9]{16}"),
    ("lob-api-key", 'lobToken := "{s}"', "test_[a-f0-9]{35}"),
    ("lob-pub-api-key", '{{"lob_token": "{s}"}}', "test_pub_[a-f0-9]{31}"),
    ("looker-client-id", '$lookerToken ??= "{s}";', "[a-z0-9]{20}"),
    ("looker-client-secret", "lookerToken,{s},prod", "[a-z0-9]{24}"),
    ("mailchimp-api-key", 'MAILCHIMP_SECRET += "{s}"', "[a-f0-9]{32}\\-us20"),
    (
        "mailgun-private-api-token",
        'curl "https://api.example.com/v1?token={s}&page=2"',
        "key\\-[a-f0-9]{32}",
    ),
    ("mailgun-pub-key", 'var mailgunKey = "{s}"; // do not commit', "pubkey\\-[a-f0-9]{32}"),
    (
        "mailgun-signing-key",
        "docker run -e MAILGUN_KEY={s} app",
        "[a-f0-9]{32}\\-00001111\\-22223333",
    ),
    ("mapbox-api-token", "export MAPBOX_API_KEY={s}", "pk\\.[a-z0-9]{60}\\.[a-z0-9]{22}"),
    ("mattermost-access-token", 'mattermost_api_key: "{s}"', "[a-z0-9]{26}"),
    ("maxmind-license-key", "key ({s}) expires tomorrow", "[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk"),
    ("messagebird-api-token", "<messagebirdToken>{s}</messagebirdToken>", "[a-z0-9]{25}"),
    ("messagebird-client-id", 'System.setProperty("MESSAGEBIRD_TOKEN", "{s}")', _UUID),
    (
        "microsoft-teams-webhook",
        "teamsToken,{s},prod",
        "https://acme\\.webhook\\.office\\.com/webhookb2/"
        + _UUID
        + "@"
        + _UUID
        + "/IncomingWebhook/[a-f0-9]{32}/"
        + _UUID,
    ),
    ("netlify-access-token", "NETLIFY_TOKEN={s}, rotated monthly", "[a-z0-9=_\\-]{40,46}"),
    ("new-relic-browser-api-token", 'newrelicToken := "{s}"', "NRJS\\-[a-f0-9]{19}"),
    ("new-relic-insert-key", '{{"newrelic_token": "{s}"}}', "NRII\\-[a-f0-9]{32}"),
    ("new-relic-user-api-id", '$newrelicToken ??= "{s}";', "[a-z0-9]{64}"),
    ("new-relic-user-api-key", "newrelicToken,{s},prod", "NRAK\\-[a-z0-9]{27}"),
    ("notion-api-token", "echo {s} | notion login --with-token", "ntn_[0-9]{11}[A-Za-z0-9]{35}"),
    ("npm-access-token", "# npmaccesstoken: {s}", "npm_[a-z0-9]{36}"),
    ("nuget-config-password", '<add key="ClearTextPassword" value="{s}" />', "[a-zA-Z0-9!#]{18}"),
    ("nytimes-access-token", 'NYTIMES_SECRET += "{s}"', "[a-z0-9]{32}"),
    ("octopus-deploy-api-key", "export OCTOPUS_TOKEN={s}", "API-[A-Z0-9]{26}"),
    ("okta-access-token", 'var oktaKey = "{s}"; // do not commit', "00[\\w=\\-]{40}"),
    ("openai-api-key", "The openaiapikey token is {s}.", "sk\\-[a-z0-9]{20}T3BlbkFJ[a-z0-9]{20}"),
    ("openshift-user-token", "<ocToken>{s}</ocToken>", "sha256~[\\w-]{43}"),
    ("perplexity-api-key", "tokens: [{s}]", "pplx-[a-zA-Z0-9]{48}"),
    (
        "plaid-api-token",
        "docker run -e PLAID_KEY={s} app",
        "access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    ),
    ("plaid-client-id", "export PLAID_API_KEY={s}", "[a-zA-Z0-9]{24}"),
    ("plaid-secret-key", 'plaid_api_key: "{s}"', "[a-z0-9]{30}"),
    ("planetscale-api-token", "Use {s}, then restart the worker.", "pscale_tkn_[a-z0-9=_\\-]{32}"),
    (
        "planetscale-oauth-token",
        'client = PLANETSCALEClient("{s}")',
        "pscale_oauth_[a-z0-9=_\\-]{32}",
    ),
    (
        "planetscale-password",
        '{{"planetscale": {{"token": "{s}"}}}}',
        "pscale_pw_[a-z0-9=_\\-]{32}",
    ),
    (
        "postman-api-token",
        'curl "https://api.example.com/v1?token={s}&page=2"',
        "PMAK\\-[a-f0-9]{24}\\-[a-f0-9]{34}",
    ),
    ("prefect-api-token", "key ({s}) expires tomorrow", "pnu_[a-z0-9]{36}"),
    ("privateai-api-token", "<privateaiToken>{s}</privateaiToken>", "[a-z0-9]{32}"),
    ("pulumi-api-token", "pulumiapitokenToken,{s},prod", "pul\\-[a-f0-9]{40}"),
    (
        "pypi-upload-token",
        "echo {s} | pypi login --with-token",
        "pypi\\-AgEIcHlwaS5vcmc[a-f0-9]{32}[a-f0-9]{32}",
    ),
    ("rapidapi-access-token", 'System.setProperty("RAPIDAPI_TOKEN", "{s}")', "[a-z0-9_-]{50}"),
    ("readme-api-token", "# apitoken: {s}", "rdme_[a-z0-9]{70}"),
    ("rubygems-api-token", "export RUBYGEMSAPITOKEN_TOKEN={s}", "rubygems_[a-f0-9]{48}"),
    ("scalingo-api-token", "The scalingo token is {s}.", "tk\\-us\\-[a-z0-9_-]{48}"),
    (
        "sendbird-access-id",
        "SENDBIRD_TOKEN={s}, rotated monthly",
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    ),
    ("sendbird-access-token", 'sendbirdToken := "{s}"', "[a-f0-9]{40}"),
    (
        "sendgrid-api-token",
        "<sengridapitokenToken>{s}</sengridapitokenToken>",
        "SG\\.[a-z0-9=_\\-]{66}",
    ),
    ("sendinblue-api-token", "tokens: [{s}]", "xkeysib\\-[a-f0-9]{64}\\-[a-z0-9]{16}"),
    ("sentry-access-token", '{{"sentry_token": "{s}"}}', "[a-f0-9]{64}"),
    (
        "sentry-org-token",
        "Use {s}, then restart the worker.",
        "sntrys_eyJpYXQiO[a-zA-Z0-9+/]{60}LCJyZWdpb25fdXJs[a-zA-Z0-9+/]{60}_[a-zA-Z0-9+/]{43}",
    ),
    ("sentry-user-token", 'client = SENTRYClient("{s}")', "sntryu_[a-f0-9]{64}"),
    (
        "settlemint-application-access-token",
        '{{"settleminttoken": {{"token": "{s}"}}}}',
        "sm_aat_[a-z0-9]{16}",
    ),
    (
        "settlemint-personal-access-token",
        'curl "https://api.example.com/v1?token={s}&page=2"',
        "sm_pat_[a-z0-9]{16}",
    ),
    ("settlemint-service-access-token", "key ({s}) expires tomorrow", "sm_sat_[a-z0-9]{16}"),
    ("shippo-api-token", "shippoToken,{s},prod", "shippo_live_[a-f0-9]{40}"),
    ("shopify-access-token", "echo {s} | shopify login --with-token", "shpat_[a-f0-9]{32}"),
    ("shopify-custom-access-token", "# shopify: {s}", "shpca_[a-f0-9]{32}"),
    ("shopify-private-app-access-token", "export SHOPIFY_TOKEN={s}", "shppa_[a-f0-9]{32}"),
    ("shopify-shared-secret", "The shopify token is {s}.", "shpss_[a-f0-9]{32}"),
    ("sidekiq-secret", "export BUNDLE_GEMS__CONTRIBSYS__COM={s}", "[a-f0-9]{8}:[a-f0-9]{8}"),
    (
        "sidekiq-sensitive-url",
        'source "https://{s}@gems.contribsys.com/"',
        "[a-f0-9]{8}:[a-f0-9]{8}",
    ),
    (
        "slack-app-token",
        "<slackToken>{s}</slackToken>",
        "xapp-1-A[A-Z0-9]{10}-[0-9]{13}-[a-f0-9]{64}",
    ),
    ("slack-bot-token", "tokens: [{s}]", "xoxb-[0-9]{12}-[0-9]{13}-[a-zA-Z0-9]{24}"),
    (
        "slack-config-access-token",
        "Use {s}, then restart the worker.",
        "xoxe\\.xoxp-1-[A-Za-z0-9]{164}",
    ),
    ("slack-config-refresh-token", 'client = REFRESHClient("{s}")', "xoxe-1-[A-Za-z0-9]{146}"),
    ("slack-legacy-bot-token", '{{"slack": {{"token": "{s}"}}}}', "xoxb-[0-9]{12}-[a-zA-Z0-9]{24}"),
    (
        "slack-legacy-token",
        'curl "https://api.example.com/v1?token={s}&page=2"',
        "xoxs-[0-9]{12}-[0-9]{9}-[0-9]{10}-[a-f0-9]{10}",
    ),
    (
        "slack-legacy-workspace-token",
        "key ({s}) expires tomorrow",
        "xoxa-2-[0-9]{9}-[0-9]{11}-[0-9]{13}-[a-f0-9]{18}",
    ),
    ("slack-user-token", "userToken,{s},prod", "xoxp-[0-9]{11}-[0-9]{10}-[0-9]{11}-[a-f0-9]{32}"),
    (
        "slack-webhook-url",
        "echo {s} | slack login --with-token",
        "hooks\\.slack\\.com/services/T[A-Z0-9]{10}/B[A-Z0-9]{10}/[a-zA-Z0-9]{24}",
    ),
    ("snyk-api-token", '$snykToken ??= "{s}";', _UUID),
    ("sonar-api-token", "sonarToken,{s},prod", "squ_[a-f0-9]{40}"),
    ("sourcegraph-access-token", "# sourcegraph: {s}", "sgp_[a-f0-9]{16}_[a-f0-9]{40}"),
    ("square-access-token", "export SQUARE_TOKEN={s}", "(?:EAAA|sq0atp-)[\\w-]{22,60}"),
    (
        "squarespace-access-token",
        'SQUARESPACE_SECRET += "{s}"',
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    ),
    ("stripe-access-token", "The stripe token is {s}.", "sk_test_[a-z0-9]{30}"),
    ("sumologic-access-id", 'var sumoKey = "{s}"; // do not commit', "su[a-zA-Z0-9]{12}"),
    ("sumologic-access-token", "docker run -e SUMO_KEY={s} app", "[a-z0-9]{64}"),
    (
        "telegram-bot-api-token",
        "<telegramToken>{s}</telegramToken>",
        "[0-9]{10}:A[a-zA-Z0-9_-]{34}",
    ),
    ("travisci-access-token", "export TRAVIS_API_KEY={s}", "[a-z0-9]{22}"),
    ("twilio-api-key", "tokens: [{s}]", "SK[a-f0-9]{32}"),
    ("twitch-api-token", 'twitch_api_key: "{s}"', "[a-z0-9]{30}"),
    ("twitter-access-secret", "<twitterToken>{s}</twitterToken>", "[a-z0-9]{45}"),
    (
        "twitter-access-token",
        'System.setProperty("TWITTER_TOKEN", "{s}")',
        "[0-9]{15,25}-[a-zA-Z0-9]{20,40}",
    ),
    ("twitter-api-key", "TWITTER_TOKEN={s}, rotated monthly", "[a-z0-9]{25}"),
    ("twitter-api-secret", 'twitterToken := "{s}"', "[a-z0-9]{50}"),
    ("twitter-bearer-token", '{{"twitter_token": "{s}"}}', "A{22}[a-zA-Z0-9%]{80,100}"),
    ("typeform-api-token", '$typeformapitokenToken ??= "{s}";', "tfp_[a-z0-9=_\\-]{59}"),
    ("vault-batch-token", "Use {s}, then restart the worker.", "hvb\\.[a-z0-9_-]{138}"),
    ("vault-service-token", 'client = VAULTClient("{s}")', "s\\.[0-9][a-zA-Z0-9]{23}"),
    (
        "yandex-access-token",
        "yandexToken,{s},prod",
        "t1\\.[A-Z0-9a-z_-]+[=]{0,2}\\.[A-Z0-9a-z_-]{86}[=]{0,2}",
    ),
    ("yandex-api-key", 'YANDEX_SECRET += "{s}"', "AQVN[A-Za-z0-9_\\-]{35,38}"),
    ("yandex-aws-access-token", 'var yandexKey = "{s}"; // do not commit', "YC[a-zA-Z0-9_\\-]{38}"),
    ("zendesk-secret-key", "docker run -e ZENDESK_KEY={s} app", "[a-z0-9]{40}"),
)
_glrng = random.Random(33)
#: The marker each form above must get: the kind our rule that takes it names.
GITLEAKS_KINDS: dict[str, str] = {
    "1password-secret-key": "1password_secret_key",
    "1password-service-account-token": "1password_service_account_token",
    "adafruit-api-key": "secret_assignment",
    "adobe-client-id": "secret_assignment",
    "adobe-client-secret": "adobe_client_secret",
    "age-secret-key": "age_secret_key",
    "airtable-api-key": "airtable_api_key",
    "airtable-personnal-access-token": "airtable_personnal_access_token",
    "algolia-api-key": "algolia_api_key",
    "alibaba-access-key-id": "alibaba_access_key_id",
    "alibaba-secret-key": "secret_assignment",
    "anthropic-admin-api-key": "anthropic_key",
    "anthropic-api-key": "anthropic_key",
    "artifactory-api-key": "artifactory_api_key",
    "artifactory-reference-token": "artifactory_reference_token",
    "asana-client-id": "asana_client_id",
    "asana-client-secret": "secret_assignment",
    "atlassian-api-token": "atlassian_api_token",
    "authress-service-client-access-key": "authress_service_client_access_key",
    "aws-access-token": "aws_access_key",
    "aws-amazon-bedrock-api-key-long-lived": "aws_amazon_bedrock_api_key_long_lived",
    "aws-amazon-bedrock-api-key-short-lived": "aws_amazon_bedrock_api_key_short_lived",
    "azure-ad-client-secret": "azure_ad_client_secret",
    "beamer-api-token": "beamer_api_token",
    "bitbucket-client-id": "bitbucket_client_id",
    "bitbucket-client-secret": "secret_assignment",
    "bittrex-access-key": "secret_assignment",
    "bittrex-secret-key": "secret_assignment",
    "cisco-meraki-api-key": "secret_assignment",
    "clickhouse-cloud-api-secret-key": "clickhouse_cloud_api_secret_key",
    "clojars-api-token": "clojars_api_token",
    "cloudflare-api-key": "cloudflare_api_key",
    "cloudflare-global-api-key": "cloudflare_global_api_key",
    "cloudflare-origin-ca-key": "cloudflare_origin_ca_key",
    "codecov-access-token": "secret_assignment",
    "cohere-api-token": "secret_assignment",
    "coinbase-access-token": "secret_assignment",
    "confluent-access-token": "confluent_access_token",
    "confluent-secret-key": "confluent_secret_key",
    "contentful-delivery-api-token": "contentful_delivery_api_token",
    "curl-auth-header": "secret_assignment",
    "curl-auth-user": "curl_auth_user",
    "databricks-api-token": "databricks_api_token",
    "datadog-access-token": "secret_assignment",
    "defined-networking-api-token": "secret_assignment",
    "digitalocean-access-token": "digitalocean_access_token",
    "digitalocean-pat": "digitalocean_pat",
    "digitalocean-refresh-token": "digitalocean_refresh_token",
    "discord-api-token": "secret_assignment",
    "discord-client-id": "discord_client_id",
    "discord-client-secret": "discord_client_secret",
    "doppler-api-token": "doppler_api_token",
    "droneci-access-token": "droneci_access_token",
    "dropbox-api-token": "secret_assignment",
    "dropbox-long-lived-api-token": "secret_assignment",
    "dropbox-short-lived-api-token": "secret_assignment",
    "duffel-api-token": "duffel_api_token",
    "dynatrace-api-token": "dynatrace_api_token",
    "easypost-api-token": "easypost_api_token",
    "easypost-test-api-token": "easypost_test_api_token",
    "etsy-access-token": "etsy_access_token",
    "facebook-access-token": "facebook_access_token",
    "facebook-page-access-token": "facebook_page_access_token",
    "facebook-secret": "facebook_secret",
    "fastly-api-token": "fastly_api_token",
    "finicity-api-token": "secret_assignment",
    "finicity-client-secret": "secret_assignment",
    "finnhub-access-token": "secret_assignment",
    "flickr-access-token": "secret_assignment",
    "flutterwave-encryption-key": "flutterwave_encryption_key",
    "flutterwave-public-key": "flutterwave_public_key",
    "flutterwave-secret-key": "flutterwave_secret_key",
    "flyio-access-token": "flyio_access_token",
    "frameio-api-token": "frameio_api_token",
    "freemius-secret-key": "secret_assignment",
    "freshbooks-access-token": "freshbooks_access_token",
    "gcp-api-key": "google_api_key",
    "generic-api-key": "secret_assignment",
    "github-app-token": "github_token",
    "github-fine-grained-pat": "github_token",
    "github-oauth": "github_token",
    "github-pat": "github_token",
    "github-refresh-token": "github_token",
    "gitlab-cicd-job-token": "gitlab_token",
    "gitlab-deploy-token": "gitlab_token",
    "gitlab-feature-flag-client-token": "gitlab_token",
    "gitlab-feed-token": "gitlab_token",
    "gitlab-incoming-mail-token": "gitlab_token",
    "gitlab-kubernetes-agent-token": "gitlab_token",
    "gitlab-oauth-app-secret": "gitlab_token",
    "gitlab-pat": "gitlab_token",
    "gitlab-pat-routable": "gitlab_token",
    "gitlab-ptt": "gitlab_token",
    "gitlab-rrt": "gitlab_token",
    "gitlab-runner-authentication-token": "gitlab_token",
    "gitlab-runner-authentication-token-routable": "gitlab_token",
    "gitlab-scim-token": "gitlab_token",
    "gitlab-session-cookie": "gitlab_session_cookie",
    "gitter-access-token": "gitter_access_token",
    "gocardless-api-token": "secret_assignment",
    "grafana-api-key": "grafana_api_key",
    "grafana-cloud-api-token": "grafana_cloud_api_token",
    "grafana-service-account-token": "grafana_service_account_token",
    "harness-api-key": "harness_api_key",
    "hashicorp-tf-api-token": "hashicorp_tf_api_token",
    "hashicorp-tf-password": "secret_assignment",
    "heroku-api-key": "secret_assignment",
    "heroku-api-key-v2": "heroku_api_key_v2",
    "hubspot-api-key": "secret_assignment",
    "huggingface-access-token": "huggingface_token",
    "huggingface-organization-api-token": "huggingface_organization_api_token",
    "infracost-api-token": "infracost_api_token",
    "intercom-api-key": "intercom_api_key",
    "intra42-client-secret": "intra42_client_secret",
    "jfrog-api-key": "jfrog_api_key",
    "jfrog-identity-token": "jfrog_identity_token",
    "jwt": "jwt",
    "jwt-base64": "jwt_base64",
    "kraken-access-token": "secret_assignment",
    "kubernetes-secret-yaml": "secret_assignment",
    "kucoin-access-token": "secret_assignment",
    "kucoin-secret-key": "secret_assignment",
    "launchdarkly-access-token": "secret_assignment",
    "linear-api-key": "linear_api_key",
    "linear-client-secret": "linear_client_secret",
    "linkedin-client-id": "linkedin_client_id",
    "linkedin-client-secret": "secret_assignment",
    "lob-api-key": "secret_assignment",
    "lob-pub-api-key": "secret_assignment",
    "looker-client-id": "looker_client_id",
    "looker-client-secret": "looker_client_secret",
    "mailchimp-api-key": "mailchimp_api_key",
    "mailgun-private-api-token": "mailgun_key",
    "mailgun-pub-key": "secret_assignment",
    "mailgun-signing-key": "secret_assignment",
    "mapbox-api-token": "secret_assignment",
    "mattermost-access-token": "secret_assignment",
    "maxmind-license-key": "maxmind_license_key",
    "messagebird-api-token": "messagebird_api_token",
    "messagebird-client-id": "messagebird_client_id",
    "microsoft-teams-webhook": "microsoft_teams_webhook",
    "netlify-access-token": "secret_assignment",
    "new-relic-browser-api-token": "secret_assignment",
    "new-relic-insert-key": "secret_assignment",
    "new-relic-user-api-id": "new_relic_user_api_id",
    "new-relic-user-api-key": "new_relic_user_api_key",
    "notion-api-token": "notion_api_token",
    "npm-access-token": "npm_token",
    "nuget-config-password": "nuget_config_password",
    "nytimes-access-token": "nytimes_access_token",
    "octopus-deploy-api-key": "octopus_deploy_api_key",
    "okta-access-token": "secret_assignment",
    "openai-api-key": "openai_key",
    "openshift-user-token": "openshift_user_token",
    "perplexity-api-key": "perplexity_api_key",
    "plaid-api-token": "secret_assignment",
    "plaid-client-id": "secret_assignment",
    "plaid-secret-key": "secret_assignment",
    "planetscale-api-token": "planetscale_api_token",
    "planetscale-oauth-token": "planetscale_oauth_token",
    "planetscale-password": "planetscale_password",
    "postman-api-token": "postman_api_token",
    "prefect-api-token": "prefect_api_token",
    "privateai-api-token": "privateai_api_token",
    "pulumi-api-token": "pulumi_api_token",
    "pypi-upload-token": "pypi_token",
    "rapidapi-access-token": "rapidapi_access_token",
    "readme-api-token": "readme_api_token",
    "rubygems-api-token": "rubygems_api_token",
    "scalingo-api-token": "scalingo_api_token",
    "sendbird-access-id": "secret_assignment",
    "sendbird-access-token": "secret_assignment",
    "sendgrid-api-token": "sendgrid_key",
    "sendinblue-api-token": "sendinblue_api_token",
    "sentry-access-token": "secret_assignment",
    "sentry-org-token": "sentry_org_token",
    "sentry-user-token": "sentry_user_token",
    "settlemint-application-access-token": "settlemint_application_access_token",
    "settlemint-personal-access-token": "settlemint_personal_access_token",
    "settlemint-service-access-token": "settlemint_service_access_token",
    "shippo-api-token": "shippo_api_token",
    "shopify-access-token": "shopify_access_token",
    "shopify-custom-access-token": "shopify_custom_access_token",
    "shopify-private-app-access-token": "shopify_private_app_access_token",
    "shopify-shared-secret": "shopify_shared_secret",
    "sidekiq-secret": "sidekiq_secret",
    "sidekiq-sensitive-url": "url_password",
    "slack-app-token": "slack_token",
    "slack-bot-token": "slack_token",
    "slack-config-access-token": "slack_config_access_token",
    "slack-config-refresh-token": "slack_token",
    "slack-legacy-bot-token": "slack_token",
    "slack-legacy-token": "slack_token",
    "slack-legacy-workspace-token": "slack_token",
    "slack-user-token": "slack_token",
    "slack-webhook-url": "slack_webhook",
    "snyk-api-token": "snyk_api_token",
    "sonar-api-token": "sonar_api_token",
    "sourcegraph-access-token": "sourcegraph_access_token",
    "square-access-token": "square_access_token",
    "squarespace-access-token": "squarespace_access_token",
    "stripe-access-token": "stripe_key",
    "sumologic-access-id": "secret_assignment",
    "sumologic-access-token": "secret_assignment",
    "telegram-bot-api-token": "telegram_bot_api_token",
    "travisci-access-token": "secret_assignment",
    "twilio-api-key": "twilio_api_key",
    "twitch-api-token": "secret_assignment",
    "twitter-access-secret": "twitter_access_secret",
    "twitter-access-token": "twitter_access_token",
    "twitter-api-key": "secret_assignment",
    "twitter-api-secret": "secret_assignment",
    "twitter-bearer-token": "secret_assignment",
    "typeform-api-token": "typeform_api_token",
    "vault-batch-token": "vault_batch_token",
    "vault-service-token": "vault_service_token",
    "yandex-access-token": "yandex_access_token",
    "yandex-api-key": "yandex_api_key",
    "yandex-aws-access-token": "secret_assignment",
    "zendesk-secret-key": "secret_assignment",
}


def _from_pattern(pattern: str) -> tuple[str, str]:
    """(fixed prefix, the rest) of one string of the language of ``pattern``, a token's
    regex, as gitleaks' secrets.NewSecret makes its examples: classes, repeats (an open one
    up to 12 more), alternatives and groups."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser as parser  # type: ignore[attr-defined]

    def chars(items: Any) -> list[str]:
        out: list[str] = []
        for op, av in items:
            if op == c.LITERAL:
                out.append(chr(av))
            elif op == c.RANGE:
                out += [chr(x) for x in range(av[0], av[1] + 1)]
            elif op == c.CATEGORY:
                out += list(_ALNUM + "_" if av == c.CATEGORY_WORD else "0123456789")
        return out

    def emit(parsed: Any, out: list[str]) -> None:
        for op, av in parsed:
            if op == c.LITERAL:
                out.append(chr(av))
            elif op == c.IN:
                out.append(_glrng.choice(chars(av)))
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
                low, high, sub = av
                high = low + 12 if high == c.MAXREPEAT else high
                for _ in range(_glrng.randint(low, high)):
                    emit(sub, out)
            elif op == c.SUBPATTERN:
                emit(av[-1], out)
            elif op == c.BRANCH:
                emit(_glrng.choice(av[1]), out)

    parsed = parser.parse(pattern)
    fixed = 0  # a provider's prefix (``dop_v1_``) is not secret, as above
    while fixed < len(parsed) and parsed[fixed][0] == c.LITERAL:
        fixed += 1
    prefix = "".join(chr(av) for _op, av in parsed[:fixed])
    out: list[str] = []
    emit(parsed[fixed:], out)
    return prefix, "".join(out)


_FIRST_GITLEAKS_FORM = len(_CASES)
for _rid, _where, _pattern in _GITLEAKS_FORMS:
    _prefix, _secret = ("", _b64(_jwt())) if _pattern is None else _from_pattern(_pattern)
    _add(GITLEAKS_KINDS[_rid], _where.replace("{s}", _prefix + "{s}"), _secret)

SECRETS: list[tuple[str, str]] = [
    (kind, template.replace("{s}", secret).replace("{{", "{").replace("}}", "}"))
    for kind, template, secret in _CASES
]
#: The forms of gitleaks' rules (issue 33), the last of SECRETS.
GITLEAKS_SECRETS = SECRETS[_FIRST_GITLEAKS_FORM:]
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
    # Issue 20: ordinary lines near the new forms (prose about passwords, URLs with ports and
    # "@", base64 that is not a secret, name/value pairs that are not secrets, fullwidth text).
    "Reset your password at the link we emailed you.",
    "Reset your password at https://example.com/account/reset?from=mail",
    'docker login -u me --password-stdin < token.txt; redis-cli -a "$REDIS_PASS" ping',
    "The password is required and must be 12 characters long.",
    "Your password is too weak: add a digit and a symbol.",
    "Password: ********",
    "The PIN is 4 digits; the passphrase is optional.",
    "The password is stored in the team vault under 'staging db'.",
    "Set the password to something memorable, then log in again.",
    "My password: see the vault entry, not this chat.",
    "The API key is shown once; copy it now.",
    "Your one-time passcode is on its way.",
    "the pin 17 is high; GPIO pin 27 is low",
    "The seed phrase is written on paper in the safe.",
    "https://example.com:8443/api/v2/users?page=2#results",
    "npm install https://registry.npmjs.org:443/@babel/core/-/core-7.24.0.tgz",
    "git@github.com:acme/app.git and ssh://git@github.com:22/acme/app.git",
    "See https://api.telegram.org/bot<token>/getMe for the token format.",
    "https://github.com/acme/app/settings/hooks/412345678 (webhook #3)",
    "ls .git/hooks/ shows pre-commit.sample and post-update.sample",
    "echo 'aGVsbG8gd29ybGQ=' | base64 -d   # prints hello world",
    "base64 -d < payload.b64 > payload.bin && sha256sum payload.bin",
    f"<img alt='logo' src='data:image/png;base64,iVBORw0KGgo{_r(120, _B64)}'>",
    '{"name": "API_URL", "value": "https://api.example.com/v1"}',
    '{"name": "LOG_LEVEL", "value": "debug"}',
    "env:\n  - name: TOKEN_TTL\n    value: 3600\n  - name: AUTH_MODE\n    value: oauth2",
    '{"key": "Content-Type", "value": "application/json"}',
    "kind: ConfigMap\ndata:\n  log_level: debug\n  region: eu-west-1",
    "kubectl get secrets -n prod  # NAME TYPE DATA AGE",
    "会议时间：10：30，地点：三楼会议室。",
    "Ｔｏｔａｌ：１２３４ 円 (税込)",
    "uuid 550e8400-e29b-41d4-a716-446655440000 created",
    f"commit {_r(40, _HEX)}\nAuthor: Dev <dev@example.com>\n\n    Fix the password reset link",
    f"sha256:{_r(64, _HEX)}  dist/app-2.1.0.tar.gz",
    "-rw------- 1 me me 411 Nov  2 10:00 id_ed25519\n-rw-r--r-- 1 me me 97 Nov  2 id_ed25519.pub",
    "2026-11-02 10:00:00,123 INFO auth: login ok for user=alice from 10.0.0.5",
    "ValueError: invalid token (expected 3 segments)",
    "token_type: Bearer\nexpires_in: 3600\nscope: read write",
    'headers = {"Authorization": "Bearer " + token}',
    "curl -fsSL https://get.docker.com | sh",
    "the random seed = 42 and the learning rate is 3e-4",
    "The private key stays on the device; only the public key is uploaded.",
    "Discord: https://discord.com/channels/123456789012345678/987654321098765432",
    # Issue 33: beside what gitleaks' rules now take (any end of a token but a name's in code,
    # a call's comma, ">", "??=", "+=", a quoted literal password, a key as curl's user).
    "static void GLC_UploadLightmap(void);",
    "See GLC_Context.init() and GLSA_Settings::load() in the renderer.",
    'var apiToken string = os.Getenv("API_TOKEN")',
    'System.setProperty("API_TOKEN", System.getenv("API_TOKEN"));',
    'headers.put("X-Api-Key", apiKey);',
    "<apiToken>${API_TOKEN}</apiToken>",
    "<token>expired</token> <secret>hidden</secret>",
    "$config['api_key'] ??= getenv('API_KEY');",
    'KEY_FILES += "$HOME/.ssh/id_ed25519.pub"',
    "Top secret, Restricted and Internal are the three labels.",
    "Sorting by key, then by value, then by token count.",
    "tokens, secrets = load_tokens(), {}",
    "key_counts, token_limits = {}, [4096, 8192]",
    "Set the token in settings.py (API_TOKEN = env('API_TOKEN')).",
    "curl -u admin: https://localhost:9200/_cluster/health",
    'curl -u "{user}:{password}" https://api.example.com/v1/me',
    'password = "new_password"  # the form field\'s name',
    '{"username": "userName", "password": "userPassword"}',
    "The AGE-SECRET-KEY-1 prefix marks an age identity file.",
]
