"""Provider token rules for :mod:`wsd.hooks.redact`, most of them derived from gitleaks.

Source: gitleaks' default rule set, ``config/gitleaks.toml`` of gitleaks v8.30.0 (+27 commits,
b58d3f10; https://github.com/gitleaks/gitleaks), MIT licence, Copyright (c) 2019 Zachary Rice.
:data:`GITLEAKS` holds every rule of that file that matches a token by its own shape (a fixed
prefix, a checksum part), translated from Go's RE2 to Python's ``re`` mechanically (POSIX
classes spelled out, a mid-pattern ``(?i)`` turned into ``(?i:…)`` to the end of its group,
``\\z`` to ``\\Z``), with its keywords, secret group and entropy threshold. Left out: the
rules :mod:`wsd.hooks.redact`'s own table covers (Anthropic, OpenAI, AWS, GCP, GitHub, GitLab,
PyPI, Slack, Stripe, npm, Hugging Face, SendGrid, JWT, private keys), the "generic" rules that
need a provider's name beside the value (:data:`NET` is their generic form), and a few that
match ordinary text once that name is not required (``sourcegraph-access-token``: any 40 hex
digits; ``vault-service-token``: ``s.`` + 24 letters; ``facebook-access-token``;
``kubernetes-secret-yaml``). tests/gitleaks_examples.py runs every rule's examples.

:data:`EXTRA` adds forms gitleaks has no unique rule for (found leaking in issue 13), and
:data:`NET` is the entropy net for assignment-shaped text (gitleaks' ``generic-api-key``,
with more names).

A rule runs only when one of its anchors is in the text (an anchor with a capital letter is
matched as written, an all-lowercase one in the lower-cased text, as gitleaks matches its
keywords); its regex is compiled then, on first use, so the hook process pays only for the
rules its text could match. Anchors are gitleaks' keywords except where a keyword names the
provider rather than the token (``airtable`` for ``pat…``: a bare token must be found too) or
is too common to gate on case-insensitively (``sk``, ``api-``, ``a3-``…: matched as written).
"""

from __future__ import annotations

# (gitleaks rule id, anchors, secret group (0: the first group that matched, else the whole
# match), minimum Shannon entropy of the secret, regex). Generated; see the module docstring.
# fmt: off
GITLEAKS: tuple[tuple[str, tuple[str, ...], int, float, str], ...] = (
    ('1password-secret-key', ('A3-',), 0, 3.8,
     '\\bA3-[A-Z0-9]{6}-(?:(?:[A-Z0-9]{11})|(?:[A-Z0-9]{6}-[A-Z0-9]{5}))-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\\b'),
    ('1password-service-account-token', ('ops_',), 0, 4.0,
     'ops_eyJ[a-zA-Z0-9+/]{250,}={0,3}'),
    ('adobe-client-secret', ('p8e-',), 0, 2.0,
     '\\b(p8e-(?i:[a-z0-9]{32}))(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('age-secret-key', ('AGE-SECRET-KEY-1',), 0, 0.0,
     'AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}'),
    ('airtable-personnal-access-token', ('pat',), 0, 0.0,
     '\\b(pat[A-Za-z0-9]{14}\\.[a-f0-9]{64})\\b'),
    ('alibaba-access-key-id', ('ltai',), 0, 2.0,
     '\\b(LTAI(?i:[a-z0-9]{20}))(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('artifactory-api-key', ('AKCp',), 0, 4.5,
     '\\bAKCp[A-Za-z0-9]{69}\\b'),
    ('artifactory-reference-token', ('cmVmd',), 0, 4.5,
     '\\bcmVmd[A-Za-z0-9]{59}\\b'),
    ('authress-service-client-access-key', ('sc_', 'ext_', 'scauth_', 'authress_'), 0, 2.0,
     '\\b((?:sc|ext|scauth|authress)_(?i:[a-z0-9]{5,30}\\.[a-z0-9]{4,6}\\.(?-i:acc)[_-][a-z0-9-]{10,32}\\.[a-z0-9+/_=-]{30,120}))(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('aws-amazon-bedrock-api-key-long-lived', ('ABSK',), 0, 3.0,
     '\\b(ABSK[A-Za-z0-9+/]{109,269}={0,2})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('aws-amazon-bedrock-api-key-short-lived', ('bedrock-api-key-',), 0, 3.0,
     'bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t'),
    ('azure-ad-client-secret', ('Q~',), 0, 3.0,
     '(?:^|[\\\\\'"\\x60\\s>=:(,)])([a-zA-Z0-9_~.]{3}\\dQ~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\\\\'"\\x60\\s<),])'),
    ('clickhouse-cloud-api-secret-key', ('4b1d',), 0, 3.0,
     '\\b(4b1d[A-Za-z0-9]{38})\\b'),
    ('clojars-api-token', ('clojars_',), 0, 2.0,
     '(?i:CLOJARS_[a-z0-9]{60})'),
    ('cloudflare-origin-ca-key', ('v1.0-',), 0, 2.0,
     '\\b(v1\\.0-[a-f0-9]{24}-[a-f0-9]{146})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('databricks-api-token', ('dapi',), 0, 3.0,
     '\\b(dapi[a-f0-9]{32}(?:-\\d)?)(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('digitalocean-access-token', ('doo_v1_',), 0, 3.0,
     '\\b(doo_v1_[a-f0-9]{64})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('digitalocean-pat', ('dop_v1_',), 0, 3.0,
     '\\b(dop_v1_[a-f0-9]{64})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('digitalocean-refresh-token', ('dor_v1_',), 0, 0.0,
     '(?i:\\b(dor_v1_[a-f0-9]{64})(?:[\\x60\'"\\s;]|\\\\[nr]|$))'),
    ('doppler-api-token', ('dp.pt.',), 0, 2.0,
     'dp\\.pt\\.(?i:[a-z0-9]{43})'),
    ('duffel-api-token', ('duffel_',), 0, 2.0,
     'duffel_(?:test|live)_(?i:[a-z0-9_\\-=]{43})'),
    ('dynatrace-api-token', ('dt0c01.',), 0, 4.0,
     'dt0c01\\.(?i:[a-z0-9]{24}\\.[a-z0-9]{64})'),
    ('easypost-api-token', ('ezak',), 0, 2.0,
     '\\bEZAK(?i:[a-z0-9]{54}\\b)'),
    ('easypost-test-api-token', ('eztk',), 0, 2.0,
     '\\bEZTK(?i:[a-z0-9]{54}\\b)'),
    ('facebook-page-access-token', ('eaam', 'eaac'), 0, 4.0,
     '\\b(EAA[MC](?i:[a-z0-9]{100,}))(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('flutterwave-encryption-key', ('flwseck_test',), 0, 2.0,
     'FLWSECK_TEST-(?i:[a-h0-9]{12})'),
    ('flutterwave-public-key', ('flwpubk_test',), 0, 2.0,
     'FLWPUBK_TEST-(?i:[a-h0-9]{32}-X)'),
    ('flutterwave-secret-key', ('flwseck_test',), 0, 2.0,
     'FLWSECK_TEST-(?i:[a-h0-9]{32}-X)'),
    ('flyio-access-token', ('fo1_', 'fm1', 'fm2_'), 0, 4.0,
     '\\b((?:fo1_[\\w-]{43}|fm1[ar]_[a-zA-Z0-9+\\/]{100,}={0,3}|fm2_[a-zA-Z0-9+\\/]{100,}={0,3}))(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('frameio-api-token', ('fio-u-',), 0, 0.0,
     'fio-u-(?i:[a-z0-9\\-_=]{64})'),
    ('gitlab-pat-routable', ('glpat-',), 0, 4.0,
     '\\bglpat-[0-9a-zA-Z_-]{27,300}\\.[0-9a-z]{2}[0-9a-z]{7}\\b'),
    ('gitlab-runner-authentication-token-routable', ('glrt-',), 0, 4.0,
     '\\bglrt-t\\d_[0-9a-zA-Z_\\-]{27,300}\\.[0-9a-z]{2}[0-9a-z]{7}\\b'),
    ('gitlab-session-cookie', ('_gitlab_session=',), 0, 3.0,
     '_gitlab_session=[0-9a-z]{32}'),
    ('grafana-api-key', ('eyJrIjoi',), 0, 3.0,
     '(?i:\\b(eyJrIjoi[A-Za-z0-9]{70,400}={0,3})(?:[\\x60\'"\\s;]|\\\\[nr]|$))'),
    ('grafana-cloud-api-token', ('glc_',), 0, 3.0,
     '(?i:\\b(glc_[A-Za-z0-9+/]{32,400}={0,3})(?:[\\x60\'"\\s;]|\\\\[nr]|$))'),
    ('grafana-service-account-token', ('glsa_',), 0, 3.0,
     '(?i:\\b(glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})(?:[\\x60\'"\\s;]|\\\\[nr]|$))'),
    ('harness-api-key', ('pat.', 'sat.'), 0, 0.0,
     '(?:pat|sat)\\.[a-zA-Z0-9_-]{22}\\.[a-zA-Z0-9]{24}\\.[a-zA-Z0-9]{20}'),
    ('hashicorp-tf-api-token', ('atlasv1',), 0, 3.5,
     '(?i:[a-z0-9]{14}\\.(?-i:atlasv1)\\.[a-z0-9\\-_=]{60,70})'),
    ('heroku-api-key-v2', ('HRKU-AA',), 0, 4.0,
     '\\b((HRKU-AA[0-9a-zA-Z_-]{58}))(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('huggingface-organization-api-token', ('api_org_',), 0, 2.0,
     '\\b(api_org_(?i:[a-z]{34}))(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('infracost-api-token', ('ico-',), 0, 3.0,
     '\\b(ico-[a-zA-Z0-9]{32})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('intra42-client-secret', ('intra', 's-s4t2ud-', 's-s4t2af-'), 0, 3.0,
     '\\b(s-s4t2(?:ud|af)-(?i:[abcdef0123456789]{64}))(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('jwt-base64', ('ZXlK',), 0, 2.0,
     '\\bZXlK(?:(?P<alg>aGJHY2lPaU)|(?P<apu>aGNIVWlPaU)|(?P<apv>aGNIWWlPaU)|(?P<aud>aGRXUWlPaU)|(?P<b64>aU5qUWlP)|(?P<crit>amNtbDBJanBi)|(?P<cty>amRIa2lPaU)|(?P<epk>bGNHc2lPbn)|(?P<enc>bGJtTWlPaU)|(?P<jku>cWEzVWlPaU)|(?P<jwk>cWQyc2lPb)|(?P<iss>cGMzTWlPaU)|(?P<iv>cGRpSTZJ)|(?P<kid>cmFXUWlP)|(?P<key_ops>clpYbGZiM0J6SWpwY)|(?P<kty>cmRIa2lPaUp)|(?P<nonce>dWIyNWpaU0k2)|(?P<p2c>d01tTWlP)|(?P<p2s>d01uTWlPaU)|(?P<ppt>d2NIUWlPaU)|(?P<sub>emRXSWlPaU)|(?P<svt>emRuUWlP)|(?P<tag>MFlXY2lPaU)|(?P<typ>MGVYQWlPaUp)|(?P<url>MWNtd2l)|(?P<use>MWMyVWlPaUp)|(?P<ver>MlpYSWlPaU)|(?P<version>MlpYSnphVzl1SWpv)|(?P<x>NElqb2)|(?P<x5c>NE5XTWlP)|(?P<x5t>NE5YUWlPaU)|(?P<x5ts256>NE5YUWpVekkxTmlJNkl)|(?P<x5u>NE5YVWlPaU)|(?P<zip>NmFYQWlPaU))[a-zA-Z0-9\\/\\\\_+\\-\\r\\n]{40,}={0,2}'),
    ('linear-api-key', ('lin_api_',), 0, 2.0,
     'lin_api_(?i:[a-z0-9]{40})'),
    ('mailgun-private-api-token', ('mailgun',), 0, 0.0,
     '(?i:[\\w.-]{0,50}?(?:mailgun)(?:[ \\t\\w.-]{0,20})[\\s\'"]{0,3}(?:=|>|:{1,3}=|\\|\\||:|=>|\\?=|,)[\\x60\'"\\s=]{0,5}(key-[a-f0-9]{32})(?:[\\x60\'"\\s;]|\\\\[nr]|$))'),
    ('maxmind-license-key', ('_mmk',), 0, 4.0,
     '\\b([A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('microsoft-teams-webhook', ('webhook.office.com',), 0, 0.0,
     'https://[a-z0-9]+\\.webhook\\.office\\.com/webhookb2/[a-z0-9]{8}-([a-z0-9]{4}-){3}[a-z0-9]{12}@[a-z0-9]{8}-([a-z0-9]{4}-){3}[a-z0-9]{12}/IncomingWebhook/[a-z0-9]{32}/[a-z0-9]{8}-([a-z0-9]{4}-){3}[a-z0-9]{12}'),
    ('notion-api-token', ('ntn_',), 0, 4.0,
     '\\b(ntn_[0-9]{11}[A-Za-z0-9]{32}[A-Za-z0-9]{3})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('nuget-config-password', ('<add key=',), 0, 1.0,
     '(?i:<add key=\\"(?:(?:ClearText)?Password)\\"\\s*value=\\"(.{8,})\\"\\s*/>)'),
    ('octopus-deploy-api-key', ('API-',), 0, 3.0,
     '\\b(API-[A-Z0-9]{26})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('openshift-user-token', ('sha256~',), 0, 3.5,
     '\\b(sha256~[\\w-]{43})(?:[^\\w-]|\\Z)'),
    ('perplexity-api-key', ('pplx-',), 0, 4.0,
     '\\b(pplx-[a-zA-Z0-9]{48})(?:[\\x60\'"\\s;]|\\\\[nr]|$|\\b)'),
    ('planetscale-api-token', ('pscale_tkn_',), 0, 3.0,
     '\\b(pscale_tkn_(?i:[\\w=\\.-]{32,64}))(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('planetscale-oauth-token', ('pscale_oauth_',), 0, 3.0,
     '\\b(pscale_oauth_[\\w=\\.-]{32,64})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('planetscale-password', ('pscale_pw_',), 0, 3.0,
     '(?i:\\b(pscale_pw_(?i:[\\w=\\.-]{32,64}))(?:[\\x60\'"\\s;]|\\\\[nr]|$))'),
    ('postman-api-token', ('pmak-',), 0, 3.0,
     '\\b(PMAK-(?i:[a-f0-9]{24}\\-[a-f0-9]{34}))(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('prefect-api-token', ('pnu_',), 0, 2.0,
     '\\b(pnu_[a-zA-Z0-9]{36})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('pulumi-api-token', ('pul-',), 0, 2.0,
     '\\b(pul-[a-f0-9]{40})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('readme-api-token', ('rdme_',), 0, 2.0,
     '\\b(rdme_[a-z0-9]{70})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('rubygems-api-token', ('rubygems_',), 0, 2.0,
     '\\b(rubygems_[a-f0-9]{48})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('scalingo-api-token', ('tk-us-',), 0, 2.0,
     '\\b(tk-us-[\\w-]{48})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('sendinblue-api-token', ('xkeysib-',), 0, 2.0,
     '\\b(xkeysib-[a-f0-9]{64}\\-(?i:[a-z0-9]{16}))(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('sentry-org-token', ('sntrys_eyjpyxqio',), 0, 4.5,
     '\\bsntrys_eyJpYXQiO[a-zA-Z0-9+/]{10,200}(?:LCJyZWdpb25fdXJs|InJlZ2lvbl91cmwi|cmVnaW9uX3VybCI6)[a-zA-Z0-9+/]{10,200}={0,2}_[a-zA-Z0-9+/]{43}(?:[^a-zA-Z0-9+/]|\\Z)'),
    ('sentry-user-token', ('sntryu_',), 0, 3.5,
     '\\b(sntryu_[a-f0-9]{64})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('settlemint-application-access-token', ('sm_aat',), 0, 3.0,
     '\\b(sm_aat_[a-zA-Z0-9]{16})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('settlemint-personal-access-token', ('sm_pat',), 0, 3.0,
     '\\b(sm_pat_[a-zA-Z0-9]{16})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('settlemint-service-access-token', ('sm_sat',), 0, 3.0,
     '\\b(sm_sat_[a-zA-Z0-9]{16})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('shippo-api-token', ('shippo_',), 0, 2.0,
     '\\b(shippo_(?:live|test)_[a-fA-F0-9]{40})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('shopify-access-token', ('shpat_',), 0, 2.0,
     'shpat_[a-fA-F0-9]{32}'),
    ('shopify-custom-access-token', ('shpca_',), 0, 2.0,
     'shpca_[a-fA-F0-9]{32}'),
    ('shopify-private-app-access-token', ('shppa_',), 0, 2.0,
     'shppa_[a-fA-F0-9]{32}'),
    ('shopify-shared-secret', ('shpss_',), 0, 2.0,
     'shpss_[a-fA-F0-9]{32}'),
    ('sidekiq-sensitive-url', ('contribsys.com',), 0, 0.0,
     '(?i:\\bhttps?://([a-f0-9]{8}:[a-f0-9]{8})@(?:gems.contribsys.com|enterprise.contribsys.com)(?:[\\/|\\#|\\?|:]|$))'),
    ('slack-config-access-token', ('xoxe.xoxb-', 'xoxe.xoxp-'), 0, 2.0,
     '(?i:xoxe.xox[bp]-\\d-[A-Z0-9]{163,166})'),
    ('slack-config-refresh-token', ('xoxe-',), 0, 2.0,
     '(?i:xoxe-\\d-[A-Z0-9]{146})'),
    ('square-access-token', ('EAAA', 'sq0atp-'), 0, 2.0,
     '\\b((?:EAAA|sq0atp-)[\\w-]{22,60})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
    ('telegram-bot-api-token', ('telegr',), 0, 0.0,
     '(?i:[\\w.-]{0,50}?(?:telegr)(?:[ \\t\\w.-]{0,20})[\\s\'"]{0,3}(?:=|>|:{1,3}=|\\|\\||:|=>|\\?=|,)[\\x60\'"\\s=]{0,5}([0-9]{5,16}:(?-i:A)[a-z0-9_\\-]{34})(?:[\\x60\'"\\s;]|\\\\[nr]|$))'),
    ('twilio-api-key', ('SK',), 0, 3.0,
     'SK[0-9a-fA-F]{32}'),
    ('vault-batch-token', ('hvb.',), 0, 4.0,
     '\\b(hvb\\.[\\w-]{138,300})(?:[\\x60\'"\\s;]|\\\\[nr]|$)'),
)
# fmt: on

# Forms issue 13 found stored verbatim that no unique gitleaks rule matches by shape (gitleaks
# gates them on a provider's name nearby, or has no rule): (kind, anchors, secret group,
# minimum entropy, regex, check). ``check``: "" (the match is a secret), "lenient" (a
# password: anything but a placeholder or a reference), "cookie" (each value of a cookie
# header).
_B64 = r"[A-Za-z0-9+/]"
_END = r"(?![A-Za-z0-9_-])"
_START = r"(?<![A-Za-z0-9_-])"
# fmt: off
EXTRA: tuple[tuple[str, tuple[str, ...], int, float, str, str], ...] = (
    ("telegram_bot_token", (":A",), 1, 3.0, rf"(?<![\d:])(\d{{5,16}}:A[A-Za-z0-9_-]{{34}}){_END}", ""),
    ("discord_bot_token", ("discord", "Bot "), 1, 3.5,
     rf"{_START}([MNO][A-Za-z0-9_-]{{23,25}}\.[A-Za-z0-9_-]{{6}}\.[A-Za-z0-9_-]{{27,38}}){_END}", ""),
    ("mailgun_key", ("key-",), 1, 3.0, rf"{_START}(key-[0-9a-f]{{32}})(?![A-Za-z0-9])", ""),
    ("google_oauth_token", ("ya29.",), 1, 3.0, rf"{_START}(ya29\.[0-9A-Za-z_-]{{20,2048}}){_END}", ""),
    ("google_client_secret", ("GOCSPX-",), 1, 3.0, rf"(GOCSPX-[A-Za-z0-9_-]{{28}}){_END}", ""),
    ("atlassian_api_token", ("ATATT3",), 1, 3.5, r"(ATATT3[A-Za-z0-9_\-=]{150,250})(?![A-Za-z0-9_=-])", ""),
    ("tailscale_key", ("tskey-",), 1, 3.0,
     rf"{_START}(tskey-(?:[a-z]{{2,10}}-)?[A-Za-z0-9]{{6,}}-[A-Za-z0-9]{{10,}}){_END}", ""),
    ("doppler_token", ("dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."), 1, 3.0,
     rf"{_START}(dp\.(?:st|sa|ct|scim|audit)\.(?:[A-Za-z0-9_-]{{1,60}}\.)?[A-Za-z0-9]{{40,}}){_END}", ""),
    ("notion_api_token", ("secret_",), 1, 3.5, rf"{_START}(secret_[A-Za-z0-9]{{43}})(?![A-Za-z0-9])", ""),
    ("private_key", ("Private-Lines",), 1, 0.0,
     r"Private-Lines:[ \t]*\d+[ \t]*\r?\n((?:" + _B64 + r"{1,128}={0,2}[ \t]*(?:\r?\n|\\n|$)){1,400}"
     r"(?:Private-(?:MAC|Hash):[ \t]*[0-9a-fA-F]+)?)", ""),
    ("basic_auth", ("-u", "--user"), 1, 0.0,
     r"(?<![\w-])(?:-u|--user)(?:[ \t]+|=)['\"]?[^\s:'\"]{1,100}:([^\s'\"]{3,200})", "lenient"),
    ("mysql_password", ("mysql", "mariadb"), 1, 0.0,
     r"\b(?:mysql|mariadb)\w*\b[^\n]{0,300}?[ \t]-p('[^'\n]{1,100}'|\"[^\"\n]{1,100}\"|[^\s'\"-][^\s'\"]{0,100})",
     "lenient"),
    ("sshpass_password", ("sshpass",), 1, 0.0,
     r"\bsshpass\b[^\n]{0,200}?[ \t]-p[ \t]*('[^'\n]{1,200}'|\"[^\"\n]{1,200}\"|[^\s'\"]{1,200})", "lenient"),
    ("openssl_password", ("pass:",), 1, 0.0, r"(?<![\w-])-pass(?:in|out)?[ \t]+pass:(\S{1,200})", "lenient"),
    ("netrc_password", ("password", "passwd"), 1, 0.0,
     r"\b(?:login|user)[ \t]+\S{1,200}[ \t\r\n]+(?:password|passwd)[ \t]+(\S{1,200})", "lenient"),
    ("azure_sas_signature", ("sig=",), 1, 3.0, r"[?&;]sig=([A-Za-z0-9%+/=_-]{16,512})", ""),
    ("jwt", (".ey",), 1, 3.0,  # gitleaks' jwt: the first segment need not start "eyJ"
     r"\b(ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9/_-]{17,}\.(?:[a-zA-Z0-9/_-]{10,}={0,2})?)(?:[`'\"\s;]|\\[nr]|$)", ""),
    ("slack_webhook", ("hooks.slack.com",), 1, 0.0,
     r"(?<![\w.-])(hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,300})", ""),
    ("cookie", ("cookie",), 1, 0.0, r"(?i:\b(?:set-)?cookie)[ \t]*:[ \t]*([^\r\n]{1,4096})", "cookie"),
)
# fmt: on

#: The entropy net (gitleaks' ``generic-api-key`` with more names): ``NAME = value`` /
#: ``"name": "value"`` where NAME holds one of these words. For :data:`NET_LENIENT` names a
#: value is a secret unless it is a placeholder or a reference (as ``password=`` always was);
#: for the others it must look generated: 10+ characters, 3.5+ bits of entropy per character,
#: not a run of dictionary-like words (``user_profile_settings``).
NET_WORDS = (
    "access",
    "auth",
    "api",
    "credential",
    "creds",
    "key",
    "token",
    "secret",
    "pass",
    "pwd",
    "session",
    "cookie",
    "dsn",
)
NET_LENIENT = ("pass", "pwd", "secret", "cookie")
NET_REGEX = (
    r"(?i:"
    + "|".join(NET_WORDS)
    + r")[\w.-]{0,20}[\"'`]?[ \t]{0,3}(?:=|:{1,3}=|:|=>|\?=)[ \t]{0,5}"
    r"(?:(?P<q>[\"'`])|(?=[\w/+~.=-]))"
    r"(?P<v>(?(q)[^\"'`\\\n]{4,150}|[\w.=+/~%@!#^*-]{4,150}))"
    r"(?(q)(?P=q)|(?=[\s;,&)\]}\"'`]|\\[nr]|$))"
)
NET_ENTROPY = 3.5
