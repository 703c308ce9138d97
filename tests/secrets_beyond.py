"""Secret forms beyond gitleaks' default rules, and ordinary text beside them (issue 46).

A plain data module: an independent measurement corpus for "a defence that does not depend on
listing the vendor". Nothing here is a test; a script that measures the redactor reads it.
Every secret value is generated here from a fixed seed (``random.Random(46_2026)``): none is
real, none is copied from a scanner's examples. Only the *shape* of each form (prefix,
alphabet, length, structure) was taken from the detector definitions listed below.

* ``BEYOND``: ``(kind_class, source, text, secret)``. ``text`` is a realistic snippet (a line
  of shell, a config file, code, a tool's output, a chat prompt) holding one secret;
  ``secret`` the exact substrings that must never be stored (several pieces when the secret
  is wrapped over lines or split by concatenation: each piece must go). ``kind_class`` is
  ``<class>.<detail>``, the classes of issue 46:

  a. provider tokens with a distinctive prefix (``a.payment``, ``a.code_hosting``,
     ``a.cloud_storage``, ``a.serverless_db``, ``a.messaging``, ``a.observability``);
  b. a value on the line after its key (HCL heredoc, YAML block scalars, TOML multi-line
     strings, a continued line, a formatter's parenthesised string);
  c. a passphrase of ordinary words;
  d. a key wrapped over lines (base64 wrapped at 64 or 76 columns, a token wrapped by a
     terminal at 40);
  e. a token split by string concatenation;
  f. password hashes (crypt(3) forms, PHC strings, htpasswd, Django);
  g. presigned URL signatures (S3 SigV4 and SigV2, GCS V4, CloudFront);
  h. webhook URLs of automation vendors;
  i. a keypair as an array of byte values;
  j. other forms the scanners list and gitleaks lacks (database connection strings, SaaS
     tokens and PATs).

* ``ORDINARY``: ``(category, text)``, text the redactor must keep verbatim: what the README
  promises to keep (git hashes, UUIDs, checksums, digests, image data, paths, URLs without
  credentials) and text close to the forms above (public keys and certificates, ids with
  vendor prefixes, prose about passwords and tokens, blocks under keys that name no secret,
  byte-sized number arrays that are pixels, prices and ``$1``).

Sources consulted (detector definitions read for their shape; the names are given per entry):

* trufflehog, github.com/trufflesecurity/trufflehog, ``pkg/detectors/*/`` (snapshot of
  commit 3ab759fe, 2026-08-21): each detector's ``regexp.MustCompile`` and ``Keywords``.
* Nosey Parker, github.com/praetorian-inc/noseyparker,
  ``crates/noseyparker/data/default/builtin/rules/*.yml`` (commit 2e6e7f36, 2026-02-21).
* Kingfisher, github.com/mongodb/kingfisher, ``data/rules/*.yml`` (commit ee7c0db3,
  2025-06-20).
* betterleaks, github.com/betterleaks/betterleaks, ``config/betterleaks.toml`` (commit
  6381fa45, 2026-07-23): a gitleaks fork; only its rules whose ids gitleaks v8.30.0 lacks.
* GitHub secret scanning, "Supported secret scanning patterns",
  https://docs.github.com/en/code-security/secret-scanning/introduction/supported-secret-scanning-patterns
  (its data file ``src/secret-scanning/data/public-docs.yml`` in github/docs): the secret
  types named per entry (GitHub publishes names, not expressions).
* Issue 46's filer for classes b to i (forms no scanner lists as a vendor's; Nosey Parker's
  ``hashes.yml`` for the crypt(3) hashes), generated in the shape their formats define: AWS
  SigV4/SigV2 query authentication, GCS V4 signing, CloudFront signed URLs, crypt(3) and PHC
  hash strings, Solana's ``id.json`` keypair file.

Selection rule: a form is here only if no rule of gitleaks' default rule set (v8.30.0, as
ported in :mod:`wsd.redact.gitleaks`: ``GITLEAKS``, ``NAMED``, ``GATED``, and the rules
tests/gitleaks_examples.py ``COVERED`` lists) matches any part of its secret in its text,
gitleaks' entropy net ``generic-api-key`` aside (it matches no form by its shape; the
redactor's own net is its larger form). Of the provider tokens (classes a and j), those the
redactor's own list (:mod:`wsd.redact.forms`) names by prefix or vendor were left out as well,
so that what is measured is the defence that does not list the vendor. Where a vendor's form
has an identifier beside its secret (a key id, an account sid), only the secret is marked.
"""

from __future__ import annotations

import base64
import json
import random
import string
from urllib.parse import quote

_rng = random.Random(46_2026)
_DIGITS = string.digits
_LOWER = string.ascii_lowercase
_UPPER = string.ascii_uppercase
_ALNUM = _UPPER + _LOWER + _DIGITS
_LOWER_ALNUM = _LOWER + _DIGITS
_UPPER_ALNUM = _UPPER + _DIGITS
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_B64URL = _ALNUM + "-_"
_B32_LOWER = "abcdefghijklmnopqrstuvwxyz234567"
_CRYPT = "./" + _DIGITS + _UPPER + _LOWER  # crypt(3)'s base-64 alphabet
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _r(n: int, alphabet: str = _ALNUM) -> str:
    """``n`` seeded random characters using every character class (digit, upper and lower case)
    the alphabet has, as generated credentials do."""
    classes = [f for f in (str.isdigit, str.isupper, str.islower) if any(map(f, alphabet))]
    while True:
        s = "".join(_rng.choice(alphabet) for _ in range(n))
        if n < 8 or all(any(map(f, s)) for f in classes):
            return s


def _uuid4() -> str:
    h = _r(32, _HEX)
    variant = _rng.choice("89ab")
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[17:20]}-{h[20:32]}"


def _uuid1() -> str:
    h = _r(32, _HEX)
    return f"{h[:8]}-{h[8:12]}-1{h[13:16]}-{_rng.choice('89ab')}{h[17:20]}-{h[20:32]}"


def _uuid7() -> str:
    ms = 0x0193_4A00_0000 + _rng.randrange(0x10_0000_0000)
    h = f"{ms:012x}" + _r(20, _HEX)
    return f"{h[:8]}-{h[8:12]}-7{h[13:16]}-{_rng.choice('89ab')}{h[17:20]}-{h[20:32]}"


def _ulid() -> str:
    return _rng.choice("01") + "".join(_rng.choice(_CROCKFORD) for _ in range(25))


def _wrap(s: str, width: int) -> list[str]:
    return [s[i : i + width] for i in range(0, len(s), width)]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _bytes(n: int) -> bytes:
    return bytes(_rng.randrange(256) for _ in range(n))


BEYOND: list[tuple[str, str, str, tuple[str, ...]]] = []


def _add(kind_class: str, source: str, text: str, *secret: str) -> None:
    for piece in secret:
        if piece not in text:
            raise ValueError(f"{kind_class}: secret piece not in its text")
    BEYOND.append((kind_class, source, text, secret))


_TH = "trufflehog pkg/detectors/"
_NP = "noseyparker rules/"
_KF = "kingfisher data/rules/"
_BL = "betterleaks "
_GH = "GitHub "

# --- a. provider tokens with distinctive prefixes ------------------------------------------------

# Payment.
s = f"ramp_sec_{_r(48)}"
_add(
    "a.payment",
    f"{_TH}ramp (ramp_sec_); {_BL}ramp-client-secret; {_GH}ramp_client_secret",
    f"RAMP_CLIENT_ID=ramp_id_{_r(40)}\nRAMP_CLIENT_SECRET={s}",
    s,
)
s = f"pdl_live_apikey_{_r(26, _LOWER_ALNUM)}_{_r(22)}_{_r(3)}"
_add(
    "a.payment",
    f"{_BL}paddle-live-api-key",
    f"const paddle = new Paddle('{s}', {{ environment: Environment.production }});",
    s,
)
s = f"ak_live_{_r(30)}"
_add(
    "a.payment",
    f"{_TH}pagarme; {_KF}pagarme.yml kingfisher.pagarme.1",
    f"curl -u {s}: https://api.pagar.me/core/v5/orders",
    s,
)
s = f"FLWSECK-{_r(32, _LOWER_ALNUM)}-X"
_add(
    "a.payment",
    f"{_TH}flutterwave (FLWSECK-…-X); {_GH}flutterwave_live_api_secret_key",
    f'Flutterwave.init(publicKey: pk, secretKey: "{s}")',
    s,
)
s = f"pi_{_r(24)}_secret_{_r(25)}"
_add(
    "a.payment",
    f"{_TH}stripepaymentintent (pi_…_secret_…)",
    f'stripe.confirmCardPayment("{s}", {{ payment_method: {{ card }} }})',
    s,
)
s = f"sk_1x1_{_r(64, _HEX)}"
_add(
    "a.payment",
    f"{_TH}rechargepayments (Newer API Keys: sk_1x1_)",
    f"X-Recharge-Access-Token: {s}",
    s,
)
s = f"sk_{_uuid4()}"
_add(
    "a.payment",
    f"{_TH}checkout; {_BL}checkout-secret-key; {_GH}checkout_production_secret_key",
    f"checkout:\n  secret: {s}\n  processing_channel: pc_{_r(26, _LOWER_ALNUM)}",
    s,
)
s = f"mercury_production_rma_{_r(44)}_yrucrem"
_add(
    "a.payment",
    f"{_BL}mercury-production-api-token; {_GH}mercury_production_api_token",
    f"requests.get(url, headers={{'Authorization': 'Bearer {s}'}})",
    s,
)
s = f"$aact_prod_{_r(60, _B64URL)}"
_add("a.payment", f"{_BL}asaas-api-token; {_GH}asaas_api_token", f"ASAAS_ACCESS_TOKEN='{s}'", s)
s = f"polar_oat_{_r(43, _B64URL)}"
_add(
    "a.payment",
    f"{_BL}polar-organization-access-token",
    f'polar = Polar(access_token="{s}", server="production")',
    s,
)
s = f"live_{_r(27)}"
_add(
    "a.payment",
    f"{_TH}column (live_ after the word column)",
    f'# Column bank API\ncolumn_client = Column("{s}")',
    s,
)

# Code hosting, CI and package registries.
s = f"ATBB{_r(32)}"
_add(
    "a.code_hosting",
    f"{_NP}bitbucket.yml np.bitbucket.1; {_TH}bitbucketapppassword",
    f"git clone https://ci-bot:{s}@bitbucket.org/acme/payments.git",
    s,
)
s = f"BBDC-{_r(44, _ALNUM + '+/')}"
_add(
    "a.code_hosting",
    f"{_TH}atlassiandatacenter/bitbucketdatacenter; {_GH}bitbucket_server_personal_access_token",
    f"http GET https://git.acme.internal/rest/api/1.0/projects 'Authorization:Bearer {s}'",
    s,
)
s = f"bkua_{_r(40, _LOWER_ALNUM)}"
_add(
    "a.code_hosting",
    f"{_TH}buildkite/v2; {_BL}buildkite-user-access-token; {_GH}buildkite_user_access_token",
    f"$ bk configure --org acme --token {s}",
    s,
)
s = f"bkpat_{_r(54, _B64URL)}"
_add(
    "a.code_hosting",
    f"{_BL}buildkite-service-token (bkpat_)",
    f"packages:\n  registry: https://packages.buildkite.com/acme/py\n  token: {s}",
    s,
)
s = f"CCIPAT_{_r(22)}_{_r(40, _HEX)}"
_add(
    "a.code_hosting",
    f"{_TH}circleci/v2; {_BL}circleci-personal-token; {_GH}circleci_personal_access_token",
    f"circleci setup --no-prompt --host https://circleci.com --token {s}",
    s,
)
s = f"{_r(76)}AZDO{_r(4)}"
_add(
    "a.code_hosting",
    f"{_NP}azure.yml np.azure.4; {_GH}azure_devops_personal_access_token",
    f"az devops login --organization https://dev.azure.com/acme <<< {s}",
    s,
)
s = f"slk_{_r(64, _HEX)}"
_add(
    "a.code_hosting",
    f"{_TH}sourcegraphcody (slk_); {_KF}sourcegraph.yml kingfisher.sourcegraph.3",
    f'{{"cody.accessToken": "{s}", "cody.serverEndpoint": "https://sourcegraph.com"}}',
    s,
)
s = f"ion_{_r(42)}"
_add(
    "a.code_hosting",
    f"{_KF}ionic.yml kingfisher.ionic.1; {_BL}ionic-personal-access-token; "
    f"{_GH}ionic_personal_access_token",
    f"ionic login --token {s}",
    s,
)
s = f"cio{_r(32)}"
_add(
    "a.code_hosting",
    f"{_NP}crates.io.yml np.cratesio.1; {_GH}cratesio_api_token",
    f"$ cargo login\nplease paste the token found on https://crates.io/me below\n{s}\n"
    "       Login token for `crates-io` saved",
    s,
)
s = f"oy2{_r(43, _LOWER_ALNUM)}"
_add(
    "a.code_hosting",
    f"{_NP}nuget.yml np.nuget.1; {_GH}nuget_api_key",
    f"dotnet nuget push bin/Release/Acme.Core.2.4.0.nupkg -k {s} -s https://api.nuget.org/v3/index.json",
    s,
)
s = f"odt_{_r(32)}"
_add(
    "a.code_hosting",
    f"{_NP}dependency_track.yml np.dtrack.1; {_KF}dependency_track.yml",
    f"requests.post(f'{{DT}}/api/v1/bom', headers={{'X-Api-Key': '{s}'}}, files=files)",
    s,
)
s = f"sqco_{_r(59)}"
_add(
    "a.code_hosting",
    f"{_TH}sonarcloud/v2 (sqco_)",
    f"mvn verify sonar:sonar -Dsonar.organization=acme -Dsonar.login={s}",
    s,
)
s = f"csa_{_r(30, _HEX)}{_r(6)}"
_add(
    "a.code_hosting",
    f"{_BL}cloudsmith-api-key (csa_)",
    f"pip install acme-internal --index-url https://token:{s}@dl.cloudsmith.io/basic/acme/py/",
    s,
)
s = f"mergify_application_key_{_r(48, _B64URL)}"
_add(
    "a.code_hosting",
    f"{_BL}mergify-application-key; {_GH}mergify_application_key",
    f"- uses: Mergifyio/gha-mergify-ci@v6\n  with:\n    token: {s}",
    s,
)
s = f"SWMTKN-1-{_r(50, _LOWER_ALNUM)}-{_r(25, _LOWER_ALNUM)}"
_add(
    "a.code_hosting",
    f"{_BL}docker-swarm-join-token; {_GH}docker_swarm_join_token",
    "To add a worker to this swarm, run the following command:\n\n"
    f"    docker swarm join --token {s} 10.0.3.7:2377",
    s,
)
s = f"ddp_{_r(36)}"
_add(
    "a.code_hosting",
    f"{_TH}deno (ddp_); {_BL}deno-account-token",
    f"deployctl deploy --project=acme-edge --token={s} main.ts",
    s,
)

# Cloud storage and cloud accounts.
s = _r(86, _B64) + "=="
_add(
    "a.cloud_storage",
    f"{_TH}azure_storage; {_BL}azure-storage-account-key; {_GH}azure_storage_account_key",
    "DefaultEndpointsProtocol=https;AccountName=acmelogs;"
    f"AccountKey={s};EndpointSuffix=core.windows.net",
    s,
)
s = f"{_r(42, _B64)}+ACR{_r(6)}"
_add(
    "a.cloud_storage",
    f"{_TH}azurecontainerregistry; {_GH}azure_container_registry_key_identifiable",
    f"echo '{s}' | docker login acmeprod.azurecr.io -u acmeprod --password-stdin",
    s,
)
s = f"da2-{_r(26, _LOWER_ALNUM)}"
_add(
    "a.cloud_storage",
    f"{_NP}aws.yml np.appsync.1 (AWS AppSync API key)",
    f'const client = new AWSAppSyncClient({{ auth: {{ type: "API_KEY", apiKey: "{s}" }} }});',
    s,
)
s = f"amzn.mws.{_uuid4()}"
_add(
    "a.cloud_storage",
    f"{_NP}aws.yml np.aws.5 (Amazon MWS auth token)",
    f"MWSAuthToken={s}&SellerId=A{_r(13, _UPPER_ALNUM)}",
    s,
)
s = f"ucat_{_r(28)}"
_add(
    "a.cloud_storage",
    f"{_BL}upcloud-api-token (ucat_)",
    f'provider "upcloud" {{\n  token = "{s}"\n}}',
    s,
)
s = _r(27, _B64URL)
_add(
    "a.cloud_storage",
    f"{_TH}cloudinary (27-character secret); {_BL}cloudinary-api-secret",
    f"CLOUDINARY_URL=cloudinary://{_r(15, _DIGITS)}:{s}@acme-media",
    s,
)
s = f"CAIS{_r(300, _B64)}"
_add(
    "a.cloud_storage",
    f"{_BL}alibaba-sts-security-token (CAIS…)",
    f"ossutil cp report.csv oss://acme-exports/ --sts-token {s}",
    s,
)

# Serverless and hosted databases.
s = f"napi_{_r(64, _LOWER_ALNUM)}"
_add(
    "a.serverless_db",
    f"{_BL}neon-api-key; {_GH}neon_api_key",
    f"neonctl projects list --api-key {s}",
    s,
)
s = f"mdb_sa_sk_{_r(6, _B64URL)}{_r(34)}"
_add(
    "a.serverless_db",
    f"{_KF}mongodb.yml kingfisher.mongodb.4; {_BL}mongodb-atlas-service-account-secret; "
    f"{_GH}mongodb_atlas_service_account_secret",
    f"atlas auth login --clientId mdb_sa_id_{_r(24, _HEX)} --clientSecret {s}",
    s,
)
s = f"CCDB1_{_r(22)}_{_r(40)}"
_add(
    "a.serverless_db",
    f"{_BL}cockroachlabs-cloud-api-key; {_GH}ccdb_api_key",
    f'provider "cockroach" {{\n  apikey = "{s}"\n}}',
    s,
)
s = f"AstraCS:{_r(24, _UPPER + _LOWER)}:{_r(64, _HEX)}"
_add(
    "a.serverless_db",
    f"{_BL}datastax-astra-application-token; {_GH}datastax_astracs_token",
    f"cqlsh -u token -p {s} -b secure-connect-acme.zip",
    s,
)
s = f"essu_{_r(80, _B64URL)}"
_add(
    "a.serverless_db",
    f"{_BL}elastic-cloud-api-key (essu_); {_GH}elastic_cloud_api_key",
    f"ec deployment list --api-key {s}",
    s,
)
s = _r(88, _B64)
_add(
    "a.serverless_db",
    f"{_BL}couchbase-capella-api-key",
    f"capella:\n  api_key_id: {_r(32)}\n  api_key_secret: {s}",
    s,
)
s = _r(86, _B64URL) + "=="
_add(
    "a.serverless_db",
    f"{_BL}influxdb-api-token",
    f"influx write --bucket metrics --org acme --token {s} --file cpu.lp",
    s,
)

# Messaging.
s = f"KEY{_r(55, _B64URL)}"
_add(
    "a.messaging",
    f"{_TH}telnyx; {_BL}telnyx-api-v2-key; {_GH}telnyx_api_v2_key",
    f'telnyx.api_key = "{s}"\ntelnyx.Message.create(to="+15551230000", text="hi")',
    s,
)
s = f"mlsn.{_r(64, _HEX)}"
_add(
    "a.messaging",
    f"{_BL}mailersend-api-token; {_GH}mailersend_api_token",
    f'const mailerSend = new MailerSend({{ apiKey: "{s}" }});',
    s,
)
s = f"os_v2_app_{_r(103, _B32_LOWER)}"
_add(
    "a.messaging",
    f"{_BL}onesignal-rich-authentication-token (os_v2_app_)",
    f"curl https://api.onesignal.com/notifications -H 'Authorization: Key {s}'",
    s,
)
s = f"pub-c-{_uuid4()}"
_add(
    "a.messaging",
    f"{_TH}pubnubpublishkey; {_KF}pubnub.yml kingfisher.pubnub.1",
    f"pubnub = PubNub(PNConfiguration(publish_key='{s}', user_id='svc-notify'))",
    s,
)
s = f"{_r(64)}_{_r(4)}_{_uuid4()}"
_add("a.messaging", f"{_TH}webexbot", f"WEBEX_BOT_TOKEN: {s}", s)
s = f"xoxc-{_r(12, _DIGITS)}-{_r(12, _DIGITS)}-{_r(13, _DIGITS)}-{_r(64, _HEX)}"
_add(
    "a.messaging",
    f"{_BL}slack-session-token (xoxc-)",
    f"slackdump -token {s} -cookie d=... export C0{_r(9, _UPPER_ALNUM)}",
    s,
)
s = f"xoxd-{_r(150, _B64)}"
_add(
    "a.messaging",
    f"{_BL}slack-session-cookie (xoxd-)",
    f"document.cookie: d={s}; d-s=1700000000",
    s,
)
s = _r(40, _B64URL)
_add(
    "a.messaging",
    f"{_BL}plivo-auth-token; {_GH}plivo_auth_token",
    f"client = plivo.RestClient(auth_id='MA{_r(18, _UPPER_ALNUM)}', auth_token='{s}')",
    s,
)

# Observability (one vendor's forms: New Relic; and others).
s = f"NRRA-{_r(42, _HEX)}"
_add(
    "a.observability",
    f"{_NP}newrelic.yml np.newrelic.7; {_GH}new_relic_rest_api_key",
    f"$ newrelic profiles add --profile prod --apiKey {s} --region US",
    s,
)
s = f"NRAA-{_r(27, _HEX)}"
_add(
    "a.observability",
    f"{_NP}newrelic.yml np.newrelic.4 (admin API key)",
    f"newrelic_admin_key => '{s}',",
    s,
)
s = f"NRIQ-{_r(32, _B64URL)}"
_add(
    "a.observability",
    f"{_TH}newrelicinsightsquerykey; {_NP}newrelic.yml np.newrelic.6; "
    f"{_GH}new_relic_insights_query_key",
    f"X-Query-Key: {s}",
    s,
)
s = f"{_r(32, _HEX)}FFFFNRAL"
_add(
    "a.observability",
    f"{_TH}newreliclicensekey; {_GH}new_relic_license_key",
    f"common: &default_settings\n  license_key: '{s}'\n  app_name: Acme Web",
    s,
)
s = f"AA{_r(40, _HEX)}-NRMA"
_add(
    "a.observability",
    f"{_TH}newrelicmobileapptoken (…-NRMA)",
    f'NewRelic.withApplicationToken("{s}").start(this.getApplication());',
    s,
)
s = f"px-api-{_uuid4()}"
_add(
    "a.observability",
    f"{_NP}newrelic.yml np.newrelic.8 (Pixie API key)",
    f"px auth login --api_key {s}",
    s,
)
s = f"rootly_{_r(64, _HEX)}"
_add(
    "a.observability",
    f"{_TH}rootly; {_BL}rootly-api-key; {_GH}rootly_api_key",
    f"rootly-cli pulse --api-key {s} --summary 'deploy web'",
    s,
)
s = f"na1.{_r(100, _B64)}"
_add(
    "a.observability",
    f"{_TH}fullstory/v2 (na1.); {_BL}fullstory-api-key; {_GH}fullstory_api_key",
    f"FULLSTORY_API_KEY={s}",
    s,
)
s = f"u+{_r(18, _B64URL)}"
_add(
    "a.observability",
    f"{_TH}pagerdutyapikey (u+…); {_KF}pagerduty.yml",
    f"pd_client = pdpyras.APISession('{s}')  # pagerduty",
    s,
)

# --- b. the value on the line after its key ------------------------------------------------------

s = _r(40, _B64)
_add(
    "b.hcl_heredoc",
    "issue 46 (HCL heredoc string)",
    'resource "aws_secretsmanager_secret_version" "api" {\n'
    "  secret_id     = aws_secretsmanager_secret.api.id\n"
    f"  secret_string = <<EOT\n{s}\nEOT\n}}",
    s,
)
s = _r(32)
_add(
    "b.hcl_heredoc",
    "issue 46 (HCL indented heredoc)",
    f'variable "db_password" {{\n  default = <<-EOF\n    {s}\n  EOF\n  sensitive = true\n}}',
    s,
)
s = _r(48, _B64URL)
_add(
    "b.yaml_literal",
    "issue 46 (YAML literal block scalar)",
    f"slack:\n  signing_secret: |\n    {s}\n  channel: '#deploys'",
    s,
)
s = _r(44, _B64)
_add(
    "b.yaml_folded",
    "issue 46 (YAML folded block scalar)",
    f"smtp:\n  host: smtp.acme.dev\n  password: >-\n    {s}\n  port: 587",
    s,
)
s = _r(36)
_add(
    "b.yaml_plain",
    "issue 46 (YAML plain scalar on the next line)",
    f"integrations:\n  webhook_secret:\n    {s}\n  retries: 3",
    s,
)
s = _r(40, _B64URL)
_add(
    "b.toml_multiline",
    "issue 46 (TOML multi-line basic string)",
    f'[oauth]\nclient_id = "acme-cli"\nclient_secret = """\n{s}"""',
    s,
)
s = _r(32, _HEX)
_add(
    "b.properties_continuation",
    "issue 46 (Java .properties line continuation)",
    f"spring.datasource.url=jdbc:postgresql://db:5432/app\nspring.datasource.password=\\\n    {s}",
    s,
)
s = _r(56, _B64URL)
_add(
    "b.formatter_parenthesised",
    "issue 46 (black wraps a long string in parentheses)",
    f'SENTRY_AUTH = (\n    "{s}"\n)\n',
    s,
)

# --- c. a passphrase of ordinary words -----------------------------------------------------------

_WORD_LIST = (
    "amber anchor apple arrow autumn bamboo banjo basket beacon bicycle blanket bottle bridge "
    "candle canyon carpet castle cedar cherry cobalt comet copper cotton crystal daisy desert "
    "dolphin dragon eagle ember falcon fern forest galaxy garden ginger glacier granite "
    "harbor hazel helmet island jacket jungle kettle ladder lantern lemon maple marble meadow "
    "mirror monkey nectar noodle ocean orbit otter paddle pepper pillow planet pocket quartz "
    "rabbit ribbon river saddle salmon shadow silver socket spider spring staple summit tiger "
    "timber tomato tulip tunnel velvet violet walnut willow window winter yellow zebra"
)
_WORDS = _WORD_LIST.split()


def _phrase(n: int = 4) -> str:
    return " ".join(_rng.sample(_WORDS, n))


s = _phrase()
_add(
    "c.passphrase",
    "issue 46 (four-word passphrase in YAML)",
    f"backup:\n  repository: s3:s3.amazonaws.com/acme-restic\n  passphrase: {s}",
    s,
)
s = _phrase()
_add(
    "c.passphrase",
    "issue 46 (four-word passphrase, quoted TOML)",
    f'[signing]\nkey_id = "0x{_r(16, _HEX).upper()}"\nkey_passphrase = "{s}"',
    s,
)
s = _phrase()
_add(
    "c.passphrase",
    "issue 46 (passphrase in a chat prompt)",
    f"the passphrase for the ssh key on the build box is {s}, can you add it to the agent?",
    s,
)
s = _phrase(5)
_add(
    "c.passphrase",
    "issue 46 (ansible vault password file content)",
    f"$ cat ~/.vault_pass\n{s}\n$ ansible-playbook site.yml --vault-password-file ~/.vault_pass",
    s,
)
s = _phrase()
_add(
    "c.passphrase",
    "issue 46 (age/GPG passphrase in an env file)",
    f"GPG_PASSPHRASE={s.replace(' ', '-')}",
    s.replace(" ", "-"),
)

# --- d. a key wrapped over lines -----------------------------------------------------------------

# A service account's JSON, base64-encoded and wrapped at 76 columns (base64's default): the
# pieces are the lines that carry the private key's bytes.
_key_b64 = _b64(_bytes(1190))
_sa = json.dumps(
    {
        "type": "service_account",
        "project_id": "acme-prod-371812",
        "private_key_id": _r(40, _HEX),
        "private_key": "-----BEGIN PRIVATE KEY-----\n"
        + "\n".join(_wrap(_key_b64, 64))
        + "\n-----END PRIVATE KEY-----\n",
        "client_email": "deployer@acme-prod-371812.iam.gserviceaccount.com",
        "client_id": _r(21, _DIGITS),
    },
    indent=2,
).encode()
_sa_lines = _wrap(_b64(_sa), 76)
_ks = _sa.index(b"-----BEGIN PRIVATE KEY-----\\n") + 30
_ke = _sa.index(b"\\n-----END PRIVATE KEY-----")
_pieces = tuple(line for i, line in enumerate(_sa_lines) if i * 57 >= _ks and (i + 1) * 57 <= _ke)
_add(
    "d.wrapped_76",
    "issue 46 (base64 -w 76 of a service-account key file)",
    "$ base64 -w 76 deployer.json\n" + "\n".join(_sa_lines),
    *_pieces,
)

_der = _wrap(_b64(_bytes(900)), 64)
_add(
    "d.wrapped_64",
    "issue 46 (PKCS#8 base64 without armour, .properties continuation)",
    "jwt.signing.private-key=\\\n" + "\\\n".join(f"    {line}" for line in _der),
    *_der,
)

_hmac = _wrap(_b64(_bytes(192)), 64)
_add(
    "d.wrapped_64",
    "issue 46 (a key's base64 with escaped line breaks in JSON)",
    '{"issuer": "acme-auth", "signingKey": "' + "\\n".join(_hmac) + '", "alg": "HS512"}',
    *_hmac,
)

_sig = _r(342, _B64URL)
_jwt_head = "eyJhbGciOiJSUzI1NiIsImtpZCI6Ik" + _r(40, _B64URL)
_jwt = (
    f"{_jwt_head}.eyJhdWQiOlsiaHR0cHM6Ly9rdWJlcm5ldGVzLmRlZmF1bHQuc3ZjIl0{_r(300, _B64URL)}.{_sig}"
)
_jwt_lines = _wrap(_jwt, 40)
_sig_start = len(_jwt) - len(_sig)
_add(
    "d.wrapped_40",
    "issue 46 (a Kubernetes token wrapped by a 40-column terminal)",
    "$ kubectl create token ci-deployer --duration 24h\n" + "\n".join(_jwt_lines),
    *(line for i, line in enumerate(_jwt_lines) if i * 40 >= _sig_start and len(line) == 40),
)

_tok = _r(120, _B64URL)
_tok_lines = _wrap(_tok, 40)
_add(
    "d.wrapped_40",
    "issue 46 (a pasted API token broken over lines in a chat prompt)",
    "my terminal wrapped the token, here it is:\n"
    + "\n".join(_tok_lines)
    + "\nplease put it in the deploy config",
    *_tok_lines,
)

# --- e. a token split by string concatenation ----------------------------------------------------

p1, p2 = _r(18), _r(18)
_add(
    "e.concat_plus",
    "issue 46 (JavaScript + concatenation of a ghp_ token)",
    f'const token = "ghp_" + "{p1}" + "{p2}";',
    p1,
    p2,
)
p1, p2 = _r(40, _B64URL), _r(40, _B64URL)
_add(
    "e.concat_plus",
    "issue 46 (Python + concatenation of an sk- key)",
    f"OPENAI_KEY = 'sk-' + 'proj-' + '{p1}' + '{p2}'",
    p1,
    p2,
)
p1, p2 = _r(20), _r(20)
_add(
    "e.concat_implicit",
    "issue 46 (Python implicit concatenation over lines)",
    f'STRIPE_KEY = ("sk_live_"\n              "{p1}"\n              "{p2}")',
    p1,
    p2,
)
p1 = _r(20, _B64URL)
_add(
    "e.concat_join",
    "issue 46 (JavaScript array join)",
    f'const pat = ["glpat", "-", "{p1[:10]}", "{p1[10:]}"].join("");',
    p1[:10],
    p1[10:],
)
p1 = _r(34, _LOWER + _UPPER)
_add(
    "e.concat_shell",
    "issue 46 (shell adjacent quoted strings)",
    f'export HF_TOKEN="hf_""{p1[:17]}""{p1[17:]}"',
    p1[:17],
    p1[17:],
)
p1, p2 = _r(32, _HEX), _r(32, _HEX)
_add(
    "e.concat_template",
    "issue 46 (JavaScript template join)",
    f"const key = `${{'dapi'}}${{'{p1}'}}`;\nconst alt = `dapi${{\"{p2}\"}}`;",
    p1,
    p2,
)

# --- f. password hashes --------------------------------------------------------------------------

s = _r(53, _CRYPT)
_add(
    "f.bcrypt",
    f"{_NP}hashes.yml np.pwhash.2",
    f"INSERT INTO users (email, password_hash) VALUES ('ana@acme.dev', '$2b$12${s}');",
    s,
)
s = f"{_r(16, _CRYPT)}${_r(86, _CRYPT)}"
_add(
    "f.sha512crypt",
    f"{_NP}hashes.yml np.pwhash.4 (shadow line)",
    f"deploy:$6${s}:19700:0:99999:7:::",
    s,
)
s = f"{_r(16, _CRYPT)}${_r(43, _CRYPT)}"
_add(
    "f.sha256crypt",
    f"{_NP}hashes.yml np.pwhash.3",
    f"root:$5$rounds=535000${s}:19810:0:99999:7:::",
    s,
)
s = f"{_r(8, _CRYPT)}${_r(22, _CRYPT)}"
_add("f.md5crypt", f"{_NP}hashes.yml np.pwhash.1", f'  password: "$1${s}"  # grub', s)
s = f"{_r(8, _CRYPT)}${_r(22, _CRYPT)}"
_add("f.apr1", "issue 46 (htpasswd $apr1$)", f"$ cat .htpasswd\nadmin:$apr1${s}", s)
s = f"{_r(22, _B64.replace('+', '').replace('/', ''))}${_r(43, _ALNUM + '+/')}"
_add(
    "f.argon2id",
    "issue 46 (PHC string, argon2id)",
    f"hashed_password: $argon2id$v=19$m=65536,t=3,p=4${s}",
    s,
)
s = f"{_r(22, _CRYPT)}${_r(43, _CRYPT)}"
_add(
    "f.yescrypt",
    "issue 46 (yescrypt $y$, Debian's default)",
    f"ana:$y$j9T${s}:19900:0:99999:7:::",
    s,
)
s = f"{_r(22)}${_r(43, _B64)}="
_add(
    "f.django_pbkdf2",
    "issue 46 (Django PBKDF2 hash)",
    f'{{"model": "auth.user", "pk": 1, "fields": {{"password": "pbkdf2_sha256$870000${s}"}}}}',
    s,
)

# --- g. presigned URL signatures -----------------------------------------------------------------

s = _r(64, _HEX)
_add(
    "g.s3_sigv4",
    "issue 46 (AWS SigV4 query authentication)",
    "https://acme-reports.s3.eu-west-1.amazonaws.com/q3/summary.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    f"&X-Amz-Credential=AKIA{_r(16, _UPPER + '234567')}%2F20261121%2Feu-west-1%2Fs3%2Faws4_request"
    "&X-Amz-Date=20261121T101500Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
    f"&X-Amz-Signature={s}",
    s,
)
tok = quote(_b64(_bytes(290)), safe="")  # URL-encoded, as in the query string
s = _r(64, _HEX)
_add(
    "g.s3_sigv4",
    "issue 46 (SigV4 with an STS session token)",
    "curl -o export.csv 'https://acme-exports.s3.amazonaws.com/2026/11/export.csv"
    "?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    f"&X-Amz-Credential=ASIA{_r(16, _UPPER + '234567')}%2F20261121%2Fus-east-1%2Fs3%2Faws4_request"
    f"&X-Amz-Date=20261121T090000Z&X-Amz-Expires=900&X-Amz-Security-Token={tok}"
    f"&X-Amz-SignedHeaders=host&X-Amz-Signature={s}'",
    tok,
    s,
)
s = _r(512, _HEX)
_add(
    "g.gcs_v4",
    "issue 46 (GCS V4 signed URL)",
    "https://storage.googleapis.com/acme-uploads/avatars/u-1832.png?X-Goog-Algorithm=GOOG4-RSA-SHA256"
    "&X-Goog-Credential=signer%40acme-prod.iam.gserviceaccount.com%2F20261121%2Fauto%2Fstorage"
    "%2Fgoog4_request&X-Goog-Date=20261121T101500Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host"
    f"&X-Goog-Signature={s}",
    s,
)
s = _b64(_bytes(256)).translate(str.maketrans("+=/", "-_~"))  # CloudFront's base64
_add(
    "g.cloudfront",
    "issue 46 (CloudFront signed URL)",
    f"https://d{_r(13, _LOWER_ALNUM)}.cloudfront.net/videos/intro.mp4?Expires=1795000000"
    f"&Signature={s}&Key-Pair-Id=K{_r(13, _UPPER_ALNUM)}",
    s,
)
s = quote(_b64(_bytes(20)), safe="")  # an HMAC-SHA1, URL-encoded
_add(
    "g.s3_sigv2",
    "issue 46 (AWS SigV2 query authentication)",
    "GET https://acme-legacy.s3.amazonaws.com/dump.sql.gz"
    f"?AWSAccessKeyId=AKIA{_r(16, _UPPER_ALNUM)}"
    f"&Expires=1795000000&Signature={s}",
    s,
)
s = _r(64, _HEX)
_add(
    "g.s3_sigv4",
    "issue 46 (a presigned request in an access log line)",
    f'10.0.4.12 - - [21/Nov/2026:10:15:02 +0000] "GET /acme-media/raw/clip.mov?X-Amz-Algorithm='
    f"AWS4-HMAC-SHA256&X-Amz-Date=20261121T101500Z&X-Amz-SignedHeaders=host&X-Amz-Signature={s}"
    ' HTTP/1.1" 200 1048576',
    s,
)

# --- h. automation vendors' webhook URLs ---------------------------------------------------------

s = f"{_r(7, _DIGITS)}/{_r(7, _LOWER_ALNUM)}"
_add(
    "h.zapier",
    f"{_TH}zapierwebhook",
    f'curl -X POST https://hooks.zapier.com/hooks/catch/{s}/ -d \'{{"lead": "ana"}}\'',
    s,
)
s = _r(22, _B64URL)
_add(
    "h.ifttt",
    "issue 46 (IFTTT Webhooks maker key)",
    f'requests.post(f"https://maker.ifttt.com/trigger/door_open/with/key/{s}", json=payload)',
    s,
)
s = _r(32, _LOWER_ALNUM)
_add(
    "h.make",
    "issue 46 (Make, formerly Integromat, custom webhook)",
    f"MAKE_WEBHOOK_URL=https://hook.eu2.make.com/{s}",
    s,
)
s = _uuid4()
_add(
    "h.n8n",
    "issue 46 (n8n production webhook)",
    f"the form posts to https://acme.app.n8n.cloud/webhook/{s} and the flow does the rest",
    s,
)
s = f"{_r(32, _LOWER_ALNUM)}/{_r(32, _LOWER_ALNUM)}"
_add(
    "h.tines",
    f"{_TH}tineswebhook",
    f'{{"alert_webhook": "https://acme-sec.tines.com/webhook/{s}"}}',
    s,
)
s = _r(43, _B64URL)
_add(
    "h.power_automate",
    f"{_TH}microsoftteamswebhook/v2 (Power Automate workflow trigger)",
    f"https://prod-{_r(2, _DIGITS)}.westeurope.logic.azure.com:443/workflows/{_r(32, _HEX)}"
    f"/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun"
    f"&sv=1.0&sig={s}",
    s,
)

# --- i. a keypair as an array of byte values -----------------------------------------------------


def _byte_array(n: int, sep: str = ",") -> str:
    return "[" + sep.join(str(_rng.randrange(256)) for _ in range(n)) + "]"


s = _byte_array(64)
_add("i.solana_file", "issue 46 (Solana CLI id.json)", f"$ cat ~/.config/solana/id.json\n{s}", s)
s = _byte_array(64, ", ")
_add(
    "i.python_list",
    "issue 46 (a keypair's bytes as a Python list)",
    f"payer = Keypair.from_bytes(bytes({s}))",
    s,
)
s = _byte_array(64, ",")
_add(
    "i.json_config",
    "issue 46 (a wallet's bytes in a JSON config, no key word)",
    f'{{"cluster": "devnet", "payer": {s}, "commitment": "confirmed"}}',
    s,
)
s = "[\n" + ",\n".join(f"  {_rng.randrange(256)}" for _ in range(64)) + "\n]"
_add(
    "i.pretty_json",
    "issue 46 (jq's one-number-per-line output of id.json)",
    f"$ jq . deploy-keypair.json\n{s}",
    s,
)
s = _byte_array(32, ", ")
_add(
    "i.seed_32",
    "issue 46 (a 32-byte Ed25519 seed, Keypair.fromSeed)",
    f"const authority = Keypair.fromSeed(Uint8Array.from({s}));",
    s,
)
s = _byte_array(64, ", ")
_add(
    "i.rust_array",
    "issue 46 (a keypair's bytes in Rust)",
    f"let fee_payer = Keypair::from_bytes(&{s}).unwrap();",
    s,
)

# --- j. other forms the scanners list ------------------------------------------------------------

s = _r(16)
_add(
    "j.db_connection",
    f"{_NP}postgres.yml np.postgres.1; {_GH}neon_connection_uri",
    f"DATABASE_URL=postgresql://neondb_owner:npg_{s}@ep-quiet-river-a5f3k2.eu-central-1.aws.neon.tech"
    "/neondb?sslmode=require",
    s,
)
s = _r(24)
_add(
    "j.db_connection",
    f"{_NP}mongo.yml np.mongodb.1; {_TH}mongodb; {_GH}mongodb_atlas_db_uri_with_credentials",
    f'client = MongoClient("mongodb+srv://app:{s}@cluster0.x7kq2.mongodb.net/?retryWrites=true")',
    s,
)
s = _r(40, _B64URL)
_add(
    "j.db_connection",
    f"{_TH}redis",
    f"redis-cli -u rediss://default:{s}@eu1-neat-cod-38211.upstash.io:6379",
    s,
)
s = _r(32)
_add(
    "j.db_connection",
    f"{_TH}rabbitmq (amqp://)",
    f"CELERY_BROKER_URL = 'amqps://worker:{s}@rabbit.acme.internal:5671/prod'",
    s,
)
s = _r(20, _ALNUM + "!#%")
_add(
    "j.db_connection",
    f"{_TH}jdbc",
    f"jdbc:sqlserver://sql01.acme.local:1433;databaseName=billing;user=svc_billing;password={s};"
    "encrypt=true",
    s,
)
s = _r(18)
_add(
    "j.db_connection",
    f"{_NP}odbc.yml np.odbc.1",
    f'conn = pyodbc.connect("Driver={{ODBC Driver 18 for SQL Server}};Server=tcp:acme.database'
    f'.windows.net;Database=app;Uid=app_rw;Pwd={s};Encrypt=yes")',
    s,
)
s = _r(44, _B64)
_add(
    "j.db_connection",
    f"{_BL}azure-servicebus-connection-string",
    "Endpoint=sb://acme-events.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
    f"SharedAccessKey={s}",
    s,
)
s = _r(32, _HEX)
_add(
    "j.saas",
    f"{_TH}twilio (auth token beside an AC sid)",
    f'client = Client("AC{_r(32, _HEX)}", "{s}")',
    s,
)
s = f"00D{_r(12)}!{_r(96, _ALNUM + '._')}"
_add(
    "j.saas",
    f"{_TH}salesforce; {_NP}salesforce.yml np.salesforce.1",
    f"sf org display --target-org acme\nAccess Token     {s}\nInstance Url     "
    "https://acme.my.salesforce.com",
    s,
)
s = f"5AEP861{_r(83, _ALNUM + '.')}"
_add(
    "j.saas",
    f"{_TH}salesforcerefreshtoken; {_GH}salesforce_refresh_token",
    f"refresh_token: {s}",
    s,
)
s = f"pat-na1-{_uuid4()}"
_add(
    "j.saas",
    f"{_TH}hubspot_apikey/v2 (pat-na1-); {_KF}hubspot.yml kingfisher.hubspot.1",
    f'hubspot.Client.create(access_token="{s}")',
    s,
)
s = f"1000.{_r(32, _HEX)}.{_r(32, _HEX)}"
_add(
    "j.saas",
    f"{_TH}zohocrm; {_KF}zohocrm.yml kingfisher.zohocrm.1",
    f"Authorization: Zoho-oauthtoken {s}",
    s,
)
s = f"CFPAT-{_r(43, _B64URL)}"
_add(
    "j.saas",
    f"{_TH}contentfulpersonalaccesstoken; {_GH}contentful_personal_access_token",
    f"contentful space list --management-token {s}",
    s,
)
s = f"sk-or-v1-{_r(64, _HEX)}"
_add(
    "j.saas",
    f"{_TH}openrouter; {_BL}openrouter-api-key; {_GH}openrouter_api_key",
    f"llm keys set openrouter --value {s}",
    s,
)
s = f"sk-lf-{_uuid4()}"
_add(
    "j.saas",
    f"{_TH}langfuse (sk-lf-)",
    f'Langfuse(public_key="pk-lf-{_uuid4()}", secret_key="{s}")',
    s,
)
s = f"jina_{_r(60)}"
_add("j.saas", f"{_NP}jina.yml np.jina.1", f"JINA_API_KEY={s} python embed.py --batch 64", s)
s = f"fc-{_r(32, _HEX)}"
_add("j.saas", f"{_NP}firecrawl.yml np.firecrawl.1", f"app = FirecrawlApp(api_key='{s}')", s)
s = f"cnvca{_r(51, _B64URL)}"
_add("j.saas", f"{_BL}canva-client-secret (cnvca)", f"CANVA_CLIENT_SECRET={s}", s)
s = f"AQ.Ab8RN6{_r(44, _B64URL)}"
_add("j.saas", f"{_BL}gcp-gemini-api (AQ.Ab8RN6)", f'genai.configure(api_key="{s}")', s)
s = f"tkn.v1_{_r(71)}="
_add(
    "j.saas",
    f"{_KF}teamworkcrm.yml kingfisher.teamworkcrm.1 (tkn.v1_)",
    f"teamwork:\n  site: acme.teamwork.com\n  token: {s}",
    s,
)
s = f"unkey_{_r(26)}"
_add(
    "j.saas",
    f"{_BL}unkey-root-key; {_GH}unkey_root_key",
    f'const unkey = new Unkey({{ rootKey: "{s}" }});',
    s,
)
s = f"zpka_{_r(32, _LOWER_ALNUM)}_{_r(8, _HEX)}"
_add(
    "j.saas",
    f"{_BL}zuplo-consumer-api-key; {_GH}zuplo_consumer_api_key",
    f"await fetch(ordersUrl, {{ headers: {{ Authorization: `Bearer {s}` }} }});",
    s,
)
s = f"rpa_{_r(40, _UPPER_ALNUM)}{_r(6)}"
_add("j.saas", f"{_BL}runpod-api-key; {_GH}runpod_api_key", f"runpodctl config --apiKey {s}", s)
s = f"cog_{_r(52, _B32_LOWER)}"
_add(
    "j.saas",
    f"{_BL}devin-service-user-token (cog_)",
    f"here is the service user token for the devin integration: {s}",
    s,
)
s = f"wandb_v1_{_r(77, _ALNUM + '_')}"
_add(
    "j.saas",
    f"{_BL}weights-and-biases-api-key-v1 (wandb_v1_)",
    f"$ wandb login {s}\nwandb: Appending key for api.wandb.ai to your netrc file",
    s,
)
s = f"lip_{_r(20, _ALNUM + '_')}"
_add(
    "j.saas",
    f"{_BL}lichess-personal-access-token; {_GH}lichess_personal_access_token",
    f'berserk.Client(session=berserk.TokenSession("{s}"))',
    s,
)
s = f"persona_production_{_r(40, _LOWER_ALNUM + '-')}"
_add(
    "j.saas",
    f"{_BL}persona-production-api-key; {_GH}persona_production_api_key",
    f"Persona-Version: 2023-01-05\nAuthorization: Bearer {s}",
    s,
)
s = f"samsara_api_{_r(30)}"
_add("j.saas", f"{_BL}samsara-api-token; {_GH}samsara_api_token", f'SAMSARA_TOKEN := "{s}"', s)
s = f"VF.DM.{_r(24, _HEX)}.{_r(16)}"
_add(
    "j.saas",
    f"{_TH}voiceflow (VF.DM.)",
    f"fetch(url, {{ headers: {{ Authorization: '{s}' }} }})",
    s,
)
s = f"hawk.{_r(20, _B64URL)}.{_r(20, _B64URL)}"
_add("j.saas", f"{_NP}stackhawk.yml np.stackhawk.1", f"hawk init --api-key {s}", s)
s = f"ATCTT3xFfG{_r(180, _B64URL)}={_r(8, _HEX.upper())}"
_add(
    "j.saas",
    f"{_TH}atlassian/v2 (ATCTT3xFfG)",
    f"curl -u admin@acme.dev:{s} https://api.atlassian.com/admin/v1/orgs",
    s,
)

# --- ORDINARY: text to keep verbatim -------------------------------------------------------------

ORDINARY: list[tuple[str, str]] = []


def _keep(category: str, text: str) -> None:
    ORDINARY.append((category, text))


_SUBJECTS = (
    "Fix off-by-one in the pagination cursor",
    "Rotate signing keys through the KMS instead of env vars",
    "Add password strength meter to the signup form",
    "Bump tokenizers to 0.20.3",
    "Remove hard-coded secret from the sample config",
    "Document the token refresh flow",
    "Use bcrypt cost 12 for new password hashes",
    'Revert "Cache API responses per session"',
)
for subject in _SUBJECTS:
    _keep("git_sha", f"{_r(7, _HEX)} {subject}")
for _ in range(4):
    _keep(
        "git_sha",
        f"commit {_r(40, _HEX)}\nAuthor: Ana Lima <ana@acme.dev>\nDate:   Fri Nov 21"
        " 10:15:02 2026 +0100",
    )
_keep(
    "git_sha",
    f"pick {_r(7, _HEX)} Split the parser\npick {_r(7, _HEX)} Add tests\n"
    f"squash {_r(7, _HEX)} fixup tests",
)
_keep("git_sha", f"HEAD is now at {_r(7, _HEX)} Merge pull request #482 from acme/feature/tokens")
_keep("git_sha", f"https://github.com/acme/web/commit/{_r(40, _HEX)}#diff-{_r(64, _HEX)}")
_keep("git_sha", f"{_r(8, _HEX)} (Ana Lima 2026-11-20 14:03:11 +0100 42)     retries = 3")
_keep("git_sha", f"Cherry-picked from {_r(12, _HEX)}; see also {_r(10, _HEX)} and {_r(40, _HEX)}.")
_keep(
    "git_sha",
    f"remote: Resolving deltas: 100% (12/12)\n   {_r(7, _HEX)}..{_r(7, _HEX)}  main -> main",
)
_keep("git_sha", f"Submodule path 'vendor/libfoo': checked out '{_r(40, _HEX)}'")
_keep(
    "git_sha",
    f"index {_r(7, _HEX)}..{_r(7, _HEX)} 100644\n--- a/src/auth/token.py\n+++ b/src/auth/token.py",
)

for name in ("app.tar.gz", "model.safetensors", "ubuntu-24.04-live-server-amd64.iso", "wheel.whl"):
    _keep("digest", f"{_r(64, _HEX)}  {name}")
_keep("digest", f"SHA512 ({_r(6, _LOWER)}.zip) = {_r(128, _HEX)}")
_keep("digest", f"sha1sum: {_r(40, _HEX)}")
_keep("digest", f'md5: {_r(32, _HEX)}  etag: "{_r(32, _HEX)}-4"')
_keep("digest", f'checksum = "{_r(64, _HEX)}"')
_keep("digest", f'ETag: W/"{_r(40, _HEX)}"')
_keep("digest", f"blake3 {_r(64, _HEX)} ./dist/acme-cli")
_keep("digest", f"--hash=sha256:{_r(64, _HEX)} \\\n    --hash=sha256:{_r(64, _HEX)}")
_keep("digest", f"Verified: the SHA-256 of the download matches {_r(64, _HEX).upper()}.")
for image in ("python:3.12-slim", "nginx:1.27", "ghcr.io/acme/api:2.4.0", "postgres:16"):
    _keep("docker_digest", f"{image}@sha256:{_r(64, _HEX)}")
_keep("docker_digest", f"Digest: sha256:{_r(64, _HEX)}\nStatus: Downloaded newer image for redis:7")
_keep("docker_digest", f" => => writing image sha256:{_r(64, _HEX)}   0.0s")
_keep("docker_digest", f"FROM node:22-alpine@sha256:{_r(64, _HEX)} AS build")
_keep("docker_digest", f"image: registry.k8s.io/pause:3.9@sha256:{_r(64, _HEX)}")
_keep("docker_digest", f"/var/lib/docker/overlay2/{_r(64, _HEX)}/diff/usr/lib")
for pkg in ("react-dom", "lodash", "@types/node", "typescript", "esbuild"):
    _keep("npm_integrity", f"  integrity: sha512-{_r(86, _B64)}==")
    _keep(
        "npm_integrity",
        f'"node_modules/{pkg}": {{"version": "{_rng.randrange(1, 20)}.'
        f'{_rng.randrange(10)}.{_rng.randrange(10)}", "integrity": "sha512-{_r(86, _B64)}=="}}',
    )
_keep(
    "npm_integrity",
    f'<script src="/app.js" integrity="sha384-{_r(64, _B64)}" crossorigin="anonymous"></script>',
)
_keep("npm_integrity", f"  checksum: {_r(128, _HEX)}")
_keep("npm_integrity", f"github.com/stretchr/testify v1.9.0 h1:{_r(43, _B64)}=")
_keep("npm_integrity", f'resolved "https://registry.yarnpkg.com/ms/-/ms-2.1.3.tgz#{_r(40, _HEX)}"')

for v in (_uuid1, _uuid4, _uuid4, _uuid7, _uuid7):
    _keep("uuid", f"request {v()} finished in {_rng.randrange(5, 900)} ms")
_keep("uuid", f"session {_uuid4()[:8]}…, turn 3")
_keep("uuid", f'{{"id": "{_uuid4()}", "parent_id": "{_uuid4()}", "type": "message"}}')
_keep("uuid", f"X-Request-Id: {_uuid4()}")
_keep("uuid", f"SELECT * FROM orders WHERE id = '{_uuid7()}';")
_keep("uuid", f"idempotency_key: {_uuid4()}")
_keep("uuid", f"https://app.acme.dev/projects/{_uuid4()}/settings")
_keep("uuid", f"UUID={_uuid4()} /boot/efi vfat umask=0077 0 1")
_keep("uuid", f"correlation_id={_uuid4()} status=200 path=/v1/orders")
_keep("uuid", f"{_uuid4().upper()}.xcassets")
for _ in range(3):
    _keep("ulid", f"event {_ulid()} queued for webhook delivery")
_keep("ulid", f'{{"order_id": "{_ulid()}", "ksuid": "{_r(27)}"}}')
_keep("ulid", f"https://acme.dev/s/{_r(21, _B64URL)}  (nanoid share link)")
_keep("ulid", f'ObjectId("{_r(24, _HEX)}")')
_keep("ulid", f"cus_{_r(14)} subscribed to price_{_r(24)} (prod_{_r(14)})")
_keep("ulid", f"charge ch_{_r(24)} for payment pi_{_r(24)} succeeded")
_keep("ulid", f"evt_{_r(24)} invoice.paid acct_{_r(16)}")
_keep("ulid", f"Sentry event {_r(32, _HEX)} grouped into issue ACME-WEB-3K2")

_keep("path", f"/home/ana/.cache/pip/wheels/{_r(2, _HEX)}/{_r(2, _HEX)}/{_r(56, _HEX)}/numpy.whl")
_keep("path", f"/nix/store/{_r(32, '0123456789abcdfghijklmnpqrsvwxyz')}-python3-3.12.7/bin/python3")
_keep("path", f"~/.cargo/registry/src/index.crates.io-{_r(16, _HEX)}/serde-1.0.210/src/de/mod.rs")
_keep("path", f".git/objects/{_r(2, _HEX)}/{_r(38, _HEX)}")
_keep("path", f"/home/ana/.cache/bazel/_bazel_ana/{_r(32, _HEX)}/execroot/_main/bazel-out")
_keep("path", f"build/static/js/main.{_r(8, _HEX)}.chunk.js")
_keep("path", f"node_modules/.pnpm/react@18.3.1_{_r(26, _LOWER_ALNUM)}/node_modules/react/index.js")
_keep("path", "src/wsd/redact/__pycache__/engine.cpython-312.pyc")
_keep("path", f"/tmp/pytest-of-ana/pytest-41/test_capture0/{_r(8, _LOWER_ALNUM)}/spool.jsonl")
_keep("path", "C:\\Users\\ana\\AppData\\Local\\Temp\\go-build3728190471\\b001\\exe\\main.exe")
_keep("path", f"/var/lib/kubelet/pods/{_uuid4()}/volumes/kubernetes.io~secret/tls")
_keep("path", f"~/Library/Developer/Xcode/DerivedData/Acme-{_r(28, _LOWER)}/Build/Products")
_keep("path", f"/run/user/1000/keyring/ssh and /tmp/ssh-{_r(12)}/agent.4821")
_keep("path", f"gs://acme-ml-artifacts/runs/{_r(32, _HEX)}/checkpoints/step-12000/")

_keep("url", "https://acme.dev/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=nov26")
_keep("url", f"https://www.youtube.com/watch?v={_r(11, _B64URL)}&list=PL{_r(32, _B64URL)}")
_keep("url", "https://api.github.com/repos/acme/web/issues?state=open&per_page=100&page=3")
_keep("url", f"https://www.googleapis.com/drive/v3/files?pageSize=50&pageToken={_r(6, _ALNUM)}")
_keep("url", "https://docs.python.org/3/library/secrets.html#secrets.token_urlsafe")
_keep("url", "https://oauth2.googleapis.com/token")
_keep("url", 'token_url = "https://auth.acme.dev/oauth/token"')
_keep(
    "url",
    "https://www.google.com/maps/place/@38.7223,-9.1393,15z/data=!3m1!4b1!4m6!3m5"
    f"!1s0x{_r(16, _HEX)}",
)
_keep("url", f"https://acme.atlassian.net/browse/WEB-4821?focusedCommentId={_r(6, _DIGITS)}")
_keep("url", "https://example.com/reset-password?step=2&lang=pt-PT")
_keep("url", f"https://cdn.acme.dev/img/{_r(40, _HEX)}.webp?w=640&q=75")
_keep("url", "postgres://db.acme.internal:5432/app (credentials from the vault agent)")
_keep("url", f"https://github.com/acme/web/actions/runs/{_r(11, _DIGITS)}/job/{_r(11, _DIGITS)}")
_keep(
    "url",
    "https://login.microsoftonline.com/common/oauth2/v2.0/authorize?response_type=code"
    "&scope=openid%20profile",
)
_keep("s3_url", "s3://acme-data-lake/raw/events/year=2026/month=11/day=21/part-00000.parquet")
_keep("s3_url", "https://acme-public.s3.eu-west-1.amazonaws.com/brand/logo.svg")
_keep("s3_url", f"arn:aws:s3:::acme-logs/AWSLogs/{_r(12, _DIGITS)}/elasticloadbalancing/")
_keep("s3_url", f"arn:aws:iam::{_r(12, _DIGITS)}:role/github-actions-deployer")
_keep("s3_url", f"https://acme-assets.s3.amazonaws.com/uploads/{_uuid4()}/report.pdf")
_keep("s3_url", "aws s3 cp s3://acme-backups/db/2026-11-21.sql.gz . --region eu-west-1")
_keep(
    "s3_url",
    f"https://storage.googleapis.com/acme-public/releases/v2.4.0/acme-{_r(7, _HEX)}.tar.gz",
)

_png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + _bytes(300)
_keep("data_uri", f'<img alt="logo" src="data:image/png;base64,{_b64(_png)}">')
_keep("data_uri", f"background-image: url(data:image/gif;base64,R0lGODlh{_b64(_bytes(60))});")
_keep(
    "data_uri",
    "Content-Type: image/png\nContent-Transfer-Encoding: base64\n\n"
    + "\n".join(_wrap(_b64(_png + _bytes(400)), 76)),
)
_keep("data_uri", f'{{"thumbnail": "data:image/jpeg;base64,/9j/4AAQSkZJRg{_b64(_bytes(120))}"}}')
_svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"/>'
_keep("data_uri", f"![chart](data:image/svg+xml;base64,{_b64(_svg)})")

for _ in range(3):
    _keep(
        "css_colour",
        f".btn-primary {{ color: #{_r(6, _HEX)}; background: #{_r(6, _HEX)}; "
        f"border-color: #{_r(3, _HEX)}; }}",
    )
_keep("css_colour", "--brand-600: #1d4ed8; --brand-700: #1e40af; --shadow: 0 1px 2px #0000000d;")
_keep("css_colour", 'fill="#FF5733" stroke="#C70039"')

for _ in range(4):
    rs = _r(9, "bcdfghjklmnpqrstvwxz2456789")
    pod = _r(5, "bcdfghjklmnpqrstvwxz2456789")
    _keep("k8s_name", f"web-{rs}-{pod}   1/1   Running   0   3d4h   10.42.{_rng.randrange(255)}.7")
_keep("k8s_name", f"replicaset.apps/api-{_r(10, '0123456789abcdef')} created")
_keep(
    "k8s_name",
    f"job.batch/backup-{_r(8, _DIGITS)} complete; "
    f"pod backup-{_r(8, _DIGITS)}-{_r(5, _LOWER_ALNUM)}",
)
_keep("k8s_name", "secretName: web-tls\nsecretKeyRef:\n  name: db-credentials\n  key: password")
_keep("k8s_name", "kubectl get secret db-credentials -o jsonpath='{.data.password}' | base64 -d")
_keep(
    "k8s_name",
    f"configmap/kube-root-ca.crt  1  42d\nconfigmap/app-config-{_r(10, _LOWER_ALNUM)}  3  2d",
)

for _ in range(3):
    _keep("trace_id", f"traceparent: 00-{_r(32, _HEX)}-{_r(16, _HEX)}-01")
_keep("trace_id", f"X-Amzn-Trace-Id: Root=1-{_r(8, _HEX)}-{_r(24, _HEX)};Sampled=1")
_keep("trace_id", f"X-B3-TraceId: {_r(16, _HEX)}\nX-B3-SpanId: {_r(16, _HEX)}")
_keep("trace_id", f"dd.trace_id={_r(19, _DIGITS)} dd.span_id={_r(19, _DIGITS)}")
_keep("trace_id", f"x-amz-request-id: {_r(16, _UPPER_ALNUM)}\nx-amz-id-2: {_r(76, _B64)}")
_keep("trace_id", f"cf-ray: {_r(16, _HEX)}-LIS")
_keep("trace_id", f"request_id=req_{_r(24)} openai-processing-ms=412")
_keep("trace_id", f"x-ms-request-id: {_uuid4()}\nx-ms-client-request-id: {_uuid4()}")

_COMMITS = (
    "Move secrets out of settings.py into the environment\n\nThe SECRET_KEY now comes from "
    "DJANGO_SECRET_KEY; local dev uses a throwaway value from .env.example.",
    "auth: refresh tokens are single use\n\nA refresh token is revoked when it is exchanged; the "
    "rotation window is 30 seconds.",
    "Fix password reset emails going to spam",
    "ci: pin actions by commit sha instead of tags",
    "docs: explain how to rotate the webhook signing secret",
    "feat(api): add cursor-based pagination (next_cursor is opaque)",
)
for msg in _COMMITS:
    _keep("commit_message", msg)

_keep(
    "stack_trace",
    'Traceback (most recent call last):\n  File "/srv/app/auth/tokens.py", line '
    '88, in refresh\n    payload = jwt.decode(token, key, algorithms=["RS256"])\n'
    "jwt.exceptions.ExpiredSignatureError: Signature has expired",
)
_keep(
    "stack_trace",
    'Exception in thread "main" java.lang.IllegalStateException: key store '
    "not loaded\n\tat com.acme.crypto.KeyStoreLoader.load(KeyStoreLoader.java:57)\n\tat "
    "com.acme.App.main(App.java:21)",
)
_keep(
    "stack_trace",
    f"TypeError: Cannot read properties of undefined (reading 'token')\n    at "
    f"refresh (webpack://acme/./src/auth.ts:42:17)\n    at async main.{_r(8, _HEX)}.js:1:9981",
)
_keep(
    "stack_trace",
    f"panic: runtime error: invalid memory address or nil pointer dereference\n"
    f"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x{_r(6, _HEX)}]\n\n"
    f"goroutine 1 [running]:\nmain.(*Server).Start(0xc000{_r(6, _HEX)})",
)
_keep(
    "stack_trace",
    f"Segmentation fault at 0x7ffd{_r(8, _HEX)}; core dumped to /var/crash/core.{_r(5, _DIGITS)}",
)
_keep(
    "stack_trace",
    "thread 'main' panicked at src/keys.rs:31:9:\ncalled `Result::unwrap()` on an "
    "`Err` value: InvalidKeyLength",
)

_keep(
    "config_block",
    "jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: |\n"
    "          python -m pip install -e .[dev]\n          pytest -q\n      - name: Publish\n"
    "        env:\n          TWINE_PASSWORD: ${{ secrets.PYPI_TOKEN }}\n"
    "        run: twine upload dist/*",
)
_keep(
    "config_block",
    "description: >\n  The token service issues short-lived access tokens and\n"
    "  rotates the signing keys every 90 days.\nversion: 2.4.0",
)
_keep(
    "config_block",
    "data:\n  nginx.conf: |\n    server {\n      listen 80;\n"
    "      location / { proxy_pass http://web:8000; }\n    }",
)
_keep(
    "config_block",
    '[tool.poetry]\nname = "acme-auth"\ndescription = """\nPassword hashing and '
    'token helpers\nfor the Acme services.\n"""\nversion = "1.3.0"',
)
_keep(
    "config_block",
    'resource "aws_instance" "web" {\n  ami           = "ami-0abcdef1234567890"\n'
    '  instance_type = "t3.micro"\n  user_data     = <<-EOF\n    #!/bin/bash\n'
    "    apt-get update && apt-get install -y nginx\n    systemctl enable --now nginx\n"
    "  EOF\n}",
)
_keep(
    "config_block",
    'resource "aws_iam_policy" "read" {\n  policy = <<EOT\n{\n  "Version": '
    '"2012-10-17",\n  "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", '
    '"Resource": "*"}]\n}\nEOT\n}',
)
_keep(
    "config_block", 'script: |\n  echo "building $CI_COMMIT_SHORT_SHA"\n  make build\n  make test'
)
_keep(
    "config_block",
    "password_policy:\n  min_length: 12\n  require_symbols: true\n"
    "  max_age_days: 90\ntoken_ttl_seconds: 3600",
)
_keep(
    "config_block",
    '[database]\nhost = "db.acme.internal"\nport = 5432\n'
    'password_file = "/run/secrets/db_password"',
)
_keep(
    "config_block",
    "environment:\n  - API_KEY=${API_KEY}\n  - DATABASE_URL=${DATABASE_URL}\n"
    "  - SECRET_KEY_BASE=${SECRET_KEY_BASE:?required}",
)
_keep(
    "config_block",
    "auth:\n  provider: oidc\n  client_id: acme-web\n"
    "  client_secret_ref: vault:secret/data/web#oidc_client_secret",
)
_keep(
    "config_block",
    "sort_keys: true\nprimary_key: id\npartition_key: tenant_id\ncache_key: 'user:{id}:profile'",
)
_keep(
    "config_block",
    "keybindings:\n  - key: ctrl+shift+p\n    command: workbench.action.showCommands",
)

_PROSE = (
    "The password is case-sensitive and must be at least 12 characters.",
    "Your token is valid for 24 hours; after that, log in again.",
    "We rotate the secret key every 90 days (secret key rotation is automated).",
    "Never paste an API key into a chat; use the vault instead.",
    "Reset your password from the account page, not by email.",
    "The access token expires before the refresh token does.",
    "If the passphrase is lost, the backup cannot be restored.",
    "password: see the 1Password entry 'prod-db' (do not copy it here)",
    "Set GITHUB_TOKEN in the repository secrets, then re-run the job.",
    "The API key goes in the X-Api-Key header, the session in a cookie.",
    "A secret manager beats .env files for anything beyond local development.",
    "How many tokens does the model see? About 1.3 per word on average.",
    "She asked for the key to the meeting room; it is at reception.",
    "This keyboard's Fn key toggles the media keys.",
    "Token bucket rate limiting: 100 tokens, refilled at 10 per second.",
    "Use `ssh-keygen -t ed25519` to make a key pair, then add the public key to GitHub.",
    "The private key never leaves the HSM; only signatures do.",
    "Passwords are hashed with argon2id (m=64 MiB, t=3, p=4).",
    "The bcrypt prefix $2b$ means the 2014 fix; $2a$ hashes still verify.",
    "Enter the one-time code from your authenticator app.",
)
for line in _PROSE:
    _keep("prose", line)

_PACKAGES = (
    "python-dotenv==1.0.1",
    "keyring==25.4.1",
    "cryptography==43.0.3",
    "PyJWT==2.9.0",
    "passlib[bcrypt]==1.7.4",
    "tokenizers==0.20.3",
    "jsonwebtoken@9.0.2",
    "passport-local@1.0.0",
    "@aws-sdk/client-secrets-manager@3.654.0",
    "keytar@7.9.0",
    "bcryptjs@2.4.3",
    "github.com/golang-jwt/jwt/v5 v5.2.1",
    'secrecy = "0.10.3"',
    "argon2-cffi==23.1.0",
)
for pkg in _PACKAGES:
    _keep("package", pkg)
_keep(
    "lockfile",
    f'[[package]]\nname = "serde"\nversion = "1.0.210"\nsource = '
    f'"registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "{_r(64, _HEX)}"',
)
_keep(
    "lockfile",
    f'"node_modules/ms": {{\n  "version": "2.1.3",\n  "resolved": '
    '"https://registry.npmjs.org/ms/-/ms-2.1.3.tgz",\n'
    f'  "integrity": "sha512-{_r(86, _B64)}=="\n}}',
)
_keep(
    "lockfile",
    f'[[package]]\nname = "certifi"\nversion = "2024.8.30"\nfiles = [\n    {{file = '
    f'"certifi-2024.8.30-py3-none-any.whl", hash = "sha256:{_r(64, _HEX)}"}},\n]',
)
_keep(
    "lockfile",
    f"golang.org/x/crypto v0.28.0 h1:{_r(43, _B64)}=\n"
    f"golang.org/x/crypto v0.28.0/go.mod h1:{_r(43, _B64)}=",
)
_keep(
    "lockfile",
    f"  /@esbuild/linux-x64@0.21.5:\n    resolution: {{integrity: sha512-{_r(86, _B64)}==}}",
)

for _ in range(6):
    _keep(
        "log_line",
        f"2026-11-21T10:{_rng.randrange(60):02d}:{_rng.randrange(60):02d}Z INFO "
        f"worker[{_rng.randrange(1000, 9999)}] job={_r(8, _HEX)} done in {_rng.randrange(900)}ms",
    )
_keep("log_line", f"celery.worker.strategy: Task app.tasks.sync[{_uuid4()}] received")
_keep(
    "log_line",
    f'10.0.4.12 - - [21/Nov/2026:10:15:02 +0000] "GET /static/app.{_r(8, _HEX)}.css '
    'HTTP/2.0" 200 18231 "-" "Mozilla/5.0"',
)
_keep("log_line", f"kernel: [ 3.141592] EXT4-fs (nvme0n1p2): mounted filesystem {_uuid4()} r/w")
_keep(
    "log_line",
    f"sshd[2211]: Accepted publickey for deploy from 10.0.3.7 port 51514 ssh2: "
    f"ED25519 SHA256:{_r(43, _B64)}",
)
_keep(
    "log_line",
    f'level=warn msg="token expired" user_id={_rng.randrange(10**6)} trace={_r(32, _HEX)}',
)
_keep("log_line", f"[{_r(7, _HEX)}] POST /v1/sessions 201 12ms")
_keep(
    "log_line",
    f"audit: secret 'prod/db/password' read by role deployer (version {_rng.randrange(40)})",
)

_keep("shell_var", "awk '{print $1, $3}' access.log | sort | uniq -c | sort -rn | head")
_keep("shell_var", 'for f in "$@"; do echo "$1 -> ${f%.txt}.md"; shift; done')
_keep("shell_var", "sed -E 's/^(v[0-9]+)\\.([0-9]+)$/\\1-\\2/' versions.txt")
_keep("shell_var", 'export PATH="$HOME/.local/bin:$PATH"; echo "$?"')
_keep("shell_var", "perl -pe 's/(\\d+)/$1*2/e' numbers.txt")
_keep("shell_var", 'API_KEY="$(vault kv get -field=api_key secret/acme)" ./deploy.sh')
_keep("shell_var", 'export TOKEN=${TOKEN:-}; test -n "$TOKEN" || exit 1')
_keep("shell_var", "echo ${#PASSWORD} characters; [ ${#PASSWORD} -ge 12 ] || exit 2")
_keep("price", "The Pro plan is $12.50/month or $120/year; Teams is $2,499.00/yr.")
_keep("price", "Input costs $3 per million tokens and output $15 per million.")
_keep("price", "Q3 revenue: $2.4B, up from $2B; operating margin 18%.")
_keep("price", "Total: $1,234.56 (tax $246.91)")
_keep("price", "The $2 coffee and the $6 sandwich came to $8.")

_keep("concat", 'greeting = "Hello, " + name + "!"')
_keep("concat", "const url = '/api/' + version + '/users/' + encodeURIComponent(id);")
_keep("concat", 'path = base_dir + "/" + filename + ".json"')
_keep("concat", 'msg = ("The token endpoint is unavailable; "\n       "retrying in 5 seconds.")')
_keep("concat", "const addr = `${host}:${port}`;")
_keep("concat", '["build", "test", "deploy"].join(" -> ")')
_keep("concat", "label = 'sk-' + 'learn'  # the package alias, not a key")

_keep("number_array", "rgb = [255, 128, 0]; rgba = [12, 34, 56, 0.5]")
_keep("number_array", "kernel = [[0, -1, 0], [-1, 5, -1], [0, -1, 0]]")
_keep("number_array", "input shape: [1, 3, 224, 224]; output: [1, 1000]")
_keep("number_array", "fib = [0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233]")
_keep(
    "number_array",
    "digits.images[0].ravel() = ["
    + ", ".join(str(_rng.choice((0, 0, 0, 1, 5, 9, 13, 15, 16))) for _ in range(64))
    + "]",
)
_keep("number_array", '{"ports": [22, 80, 443, 5432, 6379, 8080, 9090]}')
_keep(
    "number_array",
    '{"ids": [' + ", ".join(str(_rng.randrange(10_000, 99_999)) for _ in range(64)) + "]}",
)
_keep("number_array", "row 12: [" + ",".join(str(_rng.randrange(256)) for _ in range(32)) + "]")
_keep(
    "number_array",
    "histogram bins: [" + ", ".join(str(_rng.randrange(300, 2000)) for _ in range(20)) + "]",
)

_cert = "\n".join(_wrap(_b64(b"0\x82\x03" + _bytes(700)), 64))
_keep("public_key", f"-----BEGIN CERTIFICATE-----\n{_cert}\n-----END CERTIFICATE-----")
_keep("public_key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_r(43, _B64)} ana@laptop")
_keep("public_key", f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{_r(300, _B64)}= deploy@ci")
_keep("public_key", f"age1{_r(58, 'qpzry9x8gf2tvdw0s3jn54khce6mua7l')}")
_keep(
    "public_key",
    f"[Peer]\nPublicKey = {_r(43, _B64)}=\nAllowedIPs = 10.8.0.2/32\nEndpoint = vpn.acme.dev:51820",
)
_keep(
    "public_key", f'gpg: key {_r(16, _HEX).upper()}: public key "Ana Lima <ana@acme.dev>" imported'
)
_keep("public_key", "SHA256 Fingerprint=" + ":".join(_r(2, "0123456789ABCDEF") for _ in range(32)))
_keep("public_key", f"wallet address: 0x{_r(40, _HEX + 'ABCDEF')}")
_keep("public_key", f"tx 0x{_r(64, _HEX)} confirmed in block {_rng.randrange(10**7, 10**8)}")
_keep(
    "public_key",
    f"-----BEGIN PUBLIC KEY-----\n{chr(10).join(_wrap(_b64(_bytes(294)), 64))}\n"
    "-----END PUBLIC KEY-----",
)
_keep("public_key", f"publishable key for the docs site: pk_test_{_r(24)} (test mode, public)")

_keep("misc", f"Build {_r(7, _HEX)} ({_r(12, _DIGITS)}) deployed to eu-west-1 by ci-bot")
_keep("misc", f"GA measurement id G-{_r(10, _UPPER_ALNUM)}; GTM-{_r(7, _UPPER_ALNUM)}")
_keep("misc", f"PR #4821 · branch feature/{_r(6, _LOWER)}-token-refresh · {_r(7, _HEX)}")
_keep("misc", f"Invoice INV-2026-{_r(6, _DIGITS)} · order {_r(10, _UPPER_ALNUM)}")
_keep("misc", f"Ticket ACME-{_r(4, _DIGITS)}: the password reset link 404s on mobile")
_keep("misc", f"image tag: {_r(40, _HEX)} (the commit the image was built from)")
_keep("misc", f"torch.manual_seed(1234); np.random.seed(42)  # run {_r(8, _LOWER_ALNUM)}")
_keep(
    "misc",
    "Wi-Fi: network 'Acme-Guest', the code is on the whiteboard; "
    f"MAC {':'.join(_r(2, _HEX) for _ in range(6))}",
)
_keep(
    "misc", f"Bluetooth LE device {':'.join(_r(2, '0123456789ABCDEF') for _ in range(6))} RSSI -61"
)
_keep("misc", f"IPv6 2001:db8:{_r(4, _HEX)}:{_r(4, _HEX)}::1/64")
_keep(
    "misc",
    f"base58 block hash {_r(44, '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz')}",
)
_keep(
    "misc",
    f"VS Code extension id ms-python.python-{_rng.randrange(2024, 2027)}.{_rng.randrange(20)}.0",
)
_keep("misc", "key: ArrowUp, code: 38; key: Enter, code: 13")
_keep("misc", '{"key": "theme", "value": "dark"}')
_keep(
    "misc",
    "- name: LOG_LEVEL\n  value: debug\n- name: API_TOKEN\n  valueFrom:\n"
    "    secretKeyRef: {name: api, key: token}",
)

# More of the same kinds, closer to the forms above.
_keep(
    "commit_message",
    f"Merge branch 'fix/token-expiry' into main\n\n(cherry picked from commit {_r(40, _HEX)})",
)
_keep(
    "commit_message", "chore: move the webhook URL to settings (the signing secret stays in Vault)"
)
_keep(
    "commit_message",
    "test: cover bcrypt hashes with cost 10 and 12\n\nSigned-off-by: Ana Lima <ana@acme.dev>",
)
_keep("commit_message", f'Revert "Bump keyring to 25.5"\n\nThis reverts commit {_r(40, _HEX)}.')
_keep(
    "stack_trace",
    "botocore.exceptions.ClientError: An error occurred (SignatureDoesNotMatch) "
    "when calling the GetObject operation: The request signature we calculated does not match "
    "the signature you provided. Check your key and signing method.",
)
_keep(
    "stack_trace",
    "psycopg.OperationalError: connection failed: FATAL:  password "
    'authentication failed for user "app"',
)
_keep(
    "stack_trace",
    "ERROR: failed to solve: failed to fetch anonymous token: unexpected status "
    "from GET request to https://auth.docker.io/token?scope=repository%3Alibrary%2Fnode%3Apull"
    "&service=registry.docker.io: 429 Too Many Requests",
)
_keep(
    "stack_trace",
    '  File "/usr/lib/python3.12/hmac.py", line 61, in __init__\n    raise '
    "TypeError(\"key: expected bytes or bytearray, but got 'str'\")",
)
_keep(
    "config_block",
    "[tool.ruff]\nline-length = 100\n\n[tool.ruff.lint]\n"
    'select = ["E", "F", "S105"]  # S105: hard-coded password string',
)
_keep(
    "config_block",
    'provider "aws" {\n  region  = "eu-west-1"\n  profile = "acme-prod"\n'
    '  default_tags {\n    tags = { team = "platform" }\n  }\n}',
)
_keep(
    "config_block",
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n"
    "  LOG_LEVEL: info\n  FEATURE_FLAGS: |\n    new-checkout=true\n    dark-mode=false",
)
_keep(
    "config_block",
    "[Unit]\nDescription=Acme worker\n[Service]\nEnvironmentFile=/etc/acme/worker"
    ".env\nExecStart=/usr/bin/acme-worker --queue default",
)
_keep(
    "config_block",
    "Host github.com\n  IdentityFile ~/.ssh/id_ed25519\n  IdentitiesOnly yes\n  AddKeysToAgent yes",
)
_keep(
    "config_block",
    'variable "region" {\n  description = <<-EOT\n    The AWS region to deploy to.\n'
    "    Must match the state bucket's region.\n  EOT\n  type    = string\n  default = "
    '"eu-west-1"\n}',
)
_keep(
    "config_block",
    'readme = """\nInstall with pip, then run `acme login`; the token is kept\n'
    'in the system keyring, never in this file.\n"""',
)
_keep(
    "config_block",
    "passwords:\n  min_length: 14\n  history: 5\ntokens:\n  access_ttl: 15m\n  refresh_ttl: 30d",
)
_keep("url", f"https://app.acme.dev/invite?team=platform&ref={_r(8, _LOWER_ALNUM)}")
_keep(
    "url",
    "https://accounts.google.com/o/oauth2/v2/auth?client_id=1234-abc.apps.googleusercontent."
    "com&redirect_uri=http%3A%2F%2Flocalhost%3A8080&response_type=code&scope=email",
)
_keep(
    "url",
    f"https://pypi.org/project/keyring/#history and https://github.com/jaraco/keyring/"
    f"blob/{_r(40, _HEX)}/README.rst",
)
_keep("url", f"https://hooks.acme.dev/docs/webhooks#verifying-signatures ({_r(7, _HEX)})")
_keep("url", "https://maker.ifttt.com/ is where the Webhooks service lives; see its settings page.")
_keep("url", "wss://realtime.acme.dev/socket?vsn=2.0.0&topic=room:lobby")
_keep("uuid", f"Created volume pvc-{_uuid4()} (10Gi, gp3)")
_keep("uuid", f'{{"trace": "{_uuid4()}", "span": "{_r(16, _HEX)}", "sampled": true}}')
_keep("uuid", f"Azure subscription {_uuid4()}, tenant {_uuid4()}")
_keep(
    "log_line", f"[INFO] Uploaded build {_r(7, _HEX)} to s3://acme-artifacts/web/{_r(40, _HEX)}.zip"
)
_keep("log_line", f"token refresh ok for user {_rng.randrange(10**5)} (expires_in=3600)")
_keep("log_line", f"GET /api/v2/items?cursor={_r(16, _DIGITS)}&limit=50 200 34ms")
_keep(
    "log_line",
    f"pip: Successfully installed cryptography-43.0.3 keyring-25.4.1 (cache {_r(8, _HEX)})",
)
_keep(
    "digest",
    f"ssh-keygen -lf ~/.ssh/id_ed25519.pub\n256 SHA256:{_r(43, _B64)} ana@laptop (ED25519)",
)
_keep("digest", f"Key fingerprint = {' '.join(_r(4, '0123456789ABCDEF') for _ in range(10))}")
_keep("digest", f"x-goog-hash: crc32c={_r(6, _B64)}==, md5={_r(22, _B64)}==")
_keep("ulid", f"Stripe webhook endpoint we_{_r(24)} received evt_{_r(24)} (livemode: false)")
_keep("ulid", f"Twilio message SM{_r(32, _HEX)} delivered from MG{_r(32, _HEX)}")
_keep(
    "ulid",
    f"Slack channel C0{_r(9, _UPPER_ALNUM)}, user U0{_r(9, _UPPER_ALNUM)}, "
    f"team T0{_r(9, _UPPER_ALNUM)}",
)
_keep(
    "public_key",
    f"-----BEGIN CERTIFICATE REQUEST-----\n{chr(10).join(_wrap(_b64(_bytes(420)), 64))}"
    "\n-----END CERTIFICATE REQUEST-----",
)
_keep(
    "public_key",
    f"authorized_keys: ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAA{_r(100, _B64)}=",
)
_keep(
    "public_key", f"The JWKS at https://auth.acme.dev/.well-known/jwks.json has kid {_r(16, _HEX)}."
)
_keep("data_uri", '{"icon": "data:image/png;base64,' + "\\n".join(_wrap(_b64(_png), 64)) + '"}')
_keep("prose", "Tokens are counted per request; the limit is 200k tokens per minute.")
_keep("prose", "He typed the wrong password three times and the account locked for 15 minutes.")
_keep("prose", "The secret ingredient is patience.")
_keep("prose", "A passphrase of four random words is easier to remember than a random password.")
_keep("prose", "What does the `$2` mean in `awk '{print $2}'`? It is the second field.")
_keep("number_array", "colour map: [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98]]")
_keep("number_array", "ascii codes of 'Hello': [72, 101, 108, 108, 111]")
_keep("number_array", "SHA-256 initial values: [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a]")
_keep("concat", 'query = "SELECT * FROM users " + "WHERE id = %s"')
_keep("concat", 'const cls = ["btn", primary ? "btn-primary" : "", size].join(" ");')
_keep("shell_var", "git log --format='%H %s' $1..$2 | wc -l")
_keep("price", "Tokens cost $0.25 per 1M input tokens on the small model.")
