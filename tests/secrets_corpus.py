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
]
