"""Provider token rules for :mod:`wsd.redact.rules`: gitleaks' whole default rule set.

Source: gitleaks' default rule set, ``config/gitleaks.toml`` of gitleaks v8.30.0 (+27 commits,
b58d3f10; https://github.com/gitleaks/gitleaks), MIT licence, Copyright (c) 2019 Zachary Rice;
the newest snapshot checked for this port (issue 20) is that same commit. All 222 rules are
here or in the redactor's own table (:mod:`wsd.redact.table`):

* :data:`GITLEAKS`: every rule that matches a token by its own shape (a fixed prefix, a
  checksum part), translated from Go's RE2 to Python's ``re`` mechanically (POSIX classes
  spelled out, a mid-pattern ``(?i)`` turned into ``(?i:…)`` to the end of its group, ``\\z``
  to ``\\Z``), with its keywords, secret group and entropy threshold.
* :data:`NAMED`: the 96 rules that need a provider's name beside the value
  (``adafruit-api-key`` … ``zendesk-secret-key``), written by :func:`named_regex`.
* :data:`GATED`: the rules that match ordinary text once the keyword gate of a whole file is
  gone (``sourcegraph-access-token``: any 40 hex digits; ``vault-service-token``: ``s.`` + 24
  letters; ``facebook-access-token``; ``kubernetes-secret-yaml``; ``curl-auth-*``), each with
  its keyword required near the token; see the comment above it.
* Covered by :mod:`wsd.redact.table`: Anthropic, OpenAI, AWS, GCP, GitHub, GitLab,
  PyPI, Slack, Stripe, npm, Hugging Face, SendGrid, JWT, private keys (tests/gitleaks_examples.py
  holds their regexes). ``generic-api-key`` is the entropy net of :mod:`wsd.redact.forms`
  (with more names); ``pkcs12-file`` matches file names only.

tests/gitleaks_examples.py and tests/test_secret_rules.py run every rule's examples.

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
    # Not gitleaks' regex alone (issue 33): it matches the fixed start, base64 of
    # "bedrock.amazonaws.com", the same in every key; the presigned URL after it, whose
    # credential and signature are the secret, was left verbatim. Here the base64 goes too.
    ('aws-amazon-bedrock-api-key-short-lived', ('bedrock-api-key-',), 0, 3.0,
     'bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/]{0,6000}={0,2}'),
    # Not gitleaks' own ends (issue 33): its lists of what may stand before and after the
    # secret left it verbatim in brackets, braces, a sentence or a query string. Here: no
    # character of the secret's own on either side (a full stop only when a word follows).
    ('azure-ad-client-secret', ('Q~',), 0, 3.0,
     '(?<![a-zA-Z0-9_~.-])([a-zA-Z0-9_~.]{3}\\dQ~[a-zA-Z0-9_~.-]{31,34})(?![a-zA-Z0-9_~-])(?!\\.[a-zA-Z0-9_~-])'),
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

# gitleaks' provider-name rules (``utils.GenerateSemiGenericRegex``): the provider's name, a
# separator, then a secret of the given shape: (rule id, keywords, minimum entropy, the name's
# regex, the secret's regex, case-sensitive secret). :func:`named_regex` writes the whole regex
# as gitleaks does, less its leading ``[\w.-]{0,50}?`` (which only widens a match to the left).
# Generated from the same config/gitleaks.toml, secrets copied as written (a mid-pattern
# ``(?i)`` dropped: the whole regex is case-insensitive there already).
# fmt: off
NAMED: tuple[tuple[str, tuple[str, ...], float, str, str, bool], ...] = (
    ('adafruit-api-key', ('adafruit',), 0.0, 'adafruit', '[a-z0-9_-]{32}', False),
    ('adobe-client-id', ('adobe',), 2.0, 'adobe', '[a-f0-9]{32}', False),
    ('airtable-api-key', ('airtable',), 0.0, 'airtable', '[a-z0-9]{17}', False),
    ('algolia-api-key', ('algolia',), 0.0, 'algolia', '[a-z0-9]{32}', False),
    ('alibaba-secret-key', ('alibaba',), 2.0, 'alibaba', '[a-z0-9]{30}', False),
    ('asana-client-id', ('asana',), 0.0, 'asana', '[0-9]{16}', False),
    ('asana-client-secret', ('asana',), 0.0, 'asana', '[a-z0-9]{32}', False),
    ('beamer-api-token', ('beamer',), 0.0, 'beamer', 'b_[a-z0-9=_\\-]{44}', False),
    ('bitbucket-client-id', ('bitbucket',), 0.0, 'bitbucket', '[a-z0-9]{32}', False),
    ('bitbucket-client-secret', ('bitbucket',), 0.0, 'bitbucket', '[a-z0-9=_\\-]{64}', False),
    ('bittrex-access-key', ('bittrex',), 0.0, 'bittrex', '[a-z0-9]{32}', False),
    ('bittrex-secret-key', ('bittrex',), 0.0, 'bittrex', '[a-z0-9]{32}', False),
    ('cisco-meraki-api-key', ('meraki',), 3.0, '(?-i:[Mm]eraki|MERAKI)', '[0-9a-f]{40}', True),
    ('cloudflare-api-key', ('cloudflare',), 2.0, 'cloudflare', '[a-z0-9_-]{40}', False),
    ('cloudflare-global-api-key', ('cloudflare',), 2.0, 'cloudflare', '[a-f0-9]{37}', False),
    ('codecov-access-token', ('codecov',), 0.0, 'codecov', '[a-z0-9]{32}', False),
    ('cohere-api-token', ('cohere', 'co_api_key'), 4.0, 'cohere|CO_API_KEY', '[a-zA-Z0-9]{40}', True),
    ('coinbase-access-token', ('coinbase',), 0.0, 'coinbase', '[a-z0-9_-]{64}', False),
    ('confluent-access-token', ('confluent',), 0.0, 'confluent', '[a-z0-9]{16}', False),
    ('confluent-secret-key', ('confluent',), 0.0, 'confluent', '[a-z0-9]{64}', False),
    ('contentful-delivery-api-token', ('contentful',), 0.0, 'contentful', '[a-z0-9=_\\-]{43}', False),
    ('datadog-access-token', ('datadog',), 0.0, 'datadog', '[a-z0-9]{40}', False),
    ('defined-networking-api-token', ('dnkey',), 0.0, 'dnkey', 'dnkey-[a-z0-9=_\\-]{26}-[a-z0-9=_\\-]{52}', False),
    ('discord-api-token', ('discord',), 0.0, 'discord', '[a-f0-9]{64}', False),
    ('discord-client-id', ('discord',), 2.0, 'discord', '[0-9]{18}', False),
    ('discord-client-secret', ('discord',), 2.0, 'discord', '[a-z0-9=_\\-]{32}', False),
    ('droneci-access-token', ('droneci',), 0.0, 'droneci', '[a-z0-9]{32}', False),
    ('dropbox-api-token', ('dropbox',), 0.0, 'dropbox', '[a-z0-9]{15}', False),
    ('dropbox-long-lived-api-token', ('dropbox',), 0.0, 'dropbox', '[a-z0-9]{11}(AAAAAAAAAA)[a-z0-9\\-_=]{43}', False),
    ('dropbox-short-lived-api-token', ('dropbox',), 0.0, 'dropbox', 'sl\\.[a-z0-9\\-=_]{135}', False),
    ('etsy-access-token', ('etsy',), 3.0, '(?-i:ETSY|[Ee]tsy)', '[a-z0-9]{24}', False),
    ('facebook-secret', ('facebook',), 3.0, 'facebook', '[a-f0-9]{32}', False),
    ('fastly-api-token', ('fastly',), 0.0, 'fastly', '[a-z0-9=_\\-]{32}', False),
    ('finicity-api-token', ('finicity',), 0.0, 'finicity', '[a-f0-9]{32}', False),
    ('finicity-client-secret', ('finicity',), 0.0, 'finicity', '[a-z0-9]{20}', False),
    ('finnhub-access-token', ('finnhub',), 0.0, 'finnhub', '[a-z0-9]{20}', False),
    ('flickr-access-token', ('flickr',), 0.0, 'flickr', '[a-z0-9]{32}', False),
    ('freshbooks-access-token', ('freshbooks',), 0.0, 'freshbooks', '[a-z0-9]{64}', False),
    ('gitter-access-token', ('gitter',), 0.0, 'gitter', '[a-z0-9_-]{40}', False),
    ('gocardless-api-token', ('live_', 'gocardless'), 0.0, 'gocardless', 'live_[a-z0-9\\-_=]{40}', False),
    ('heroku-api-key', ('heroku',), 0.0, 'heroku', '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', False),
    ('hubspot-api-key', ('hubspot',), 0.0, 'hubspot', '[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}', False),
    ('intercom-api-key', ('intercom',), 0.0, 'intercom', '[a-z0-9=_\\-]{60}', False),
    ('jfrog-api-key', ('jfrog', 'artifactory', 'bintray', 'xray'), 0.0, 'jfrog|artifactory|bintray|xray', '[a-z0-9]{73}', False),
    ('jfrog-identity-token', ('jfrog', 'artifactory', 'bintray', 'xray'), 0.0, 'jfrog|artifactory|bintray|xray', '[a-z0-9]{64}', False),
    ('kraken-access-token', ('kraken',), 0.0, 'kraken', '[a-z0-9\\/=_\\+\\-]{80,90}', False),
    ('kucoin-access-token', ('kucoin',), 0.0, 'kucoin', '[a-f0-9]{24}', False),
    ('kucoin-secret-key', ('kucoin',), 0.0, 'kucoin', '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', False),
    ('launchdarkly-access-token', ('launchdarkly',), 0.0, 'launchdarkly', '[a-z0-9=_\\-]{40}', False),
    ('linear-client-secret', ('linear',), 2.0, 'linear', '[a-f0-9]{32}', False),
    ('linkedin-client-id', ('linkedin', 'linked_in', 'linked-in'), 2.0, 'linked[_-]?in', '[a-z0-9]{14}', False),
    ('linkedin-client-secret', ('linkedin', 'linked_in', 'linked-in'), 2.0, 'linked[_-]?in', '[a-z0-9]{16}', False),
    ('lob-api-key', ('test_', 'live_'), 0.0, 'lob', '(live|test)_[a-f0-9]{35}', False),
    ('lob-pub-api-key', ('test_pub', 'live_pub', '_pub'), 0.0, 'lob', '(test|live)_pub_[a-f0-9]{31}', False),
    ('looker-client-id', ('looker',), 0.0, 'looker', '[a-z0-9]{20}', False),
    ('looker-client-secret', ('looker',), 0.0, 'looker', '[a-z0-9]{24}', False),
    ('mailchimp-api-key', ('mailchimp',), 0.0, 'MailchimpSDK.initialize|mailchimp', '[a-f0-9]{32}-us\\d\\d', False),
    ('mailgun-pub-key', ('mailgun',), 0.0, 'mailgun', 'pubkey-[a-f0-9]{32}', False),
    ('mailgun-signing-key', ('mailgun',), 0.0, 'mailgun', '[a-h0-9]{32}-[a-h0-9]{8}-[a-h0-9]{8}', False),
    ('mapbox-api-token', ('mapbox',), 0.0, 'mapbox', 'pk\\.[a-z0-9]{60}\\.[a-z0-9]{22}', False),
    ('mattermost-access-token', ('mattermost',), 0.0, 'mattermost', '[a-z0-9]{26}', False),
    ('messagebird-api-token', ('messagebird', 'message-bird', 'message_bird'), 0.0, 'message[_-]?bird', '[a-z0-9]{25}', False),
    ('messagebird-client-id', ('messagebird', 'message-bird', 'message_bird'), 0.0, 'message[_-]?bird', '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', False),
    ('netlify-access-token', ('netlify',), 0.0, 'netlify', '[a-z0-9=_\\-]{40,46}', False),
    ('new-relic-browser-api-token', ('nrjs-',), 0.0, 'new-relic|newrelic|new_relic', 'NRJS-[a-f0-9]{19}', False),
    ('new-relic-insert-key', ('nrii-',), 0.0, 'new-relic|newrelic|new_relic', 'NRII-[a-z0-9-]{32}', False),
    ('new-relic-user-api-id', ('new-relic', 'newrelic', 'new_relic'), 0.0, 'new-relic|newrelic|new_relic', '[a-z0-9]{64}', False),
    ('new-relic-user-api-key', ('nrak',), 0.0, 'new-relic|newrelic|new_relic', 'NRAK-[a-z0-9]{27}', False),
    ('nytimes-access-token', ('nytimes', 'new-york-times', 'newyorktimes'), 0.0, 'nytimes|new-york-times,|newyorktimes', '[a-z0-9=_\\-]{32}', False),
    ('okta-access-token', ('okta',), 4.0, '(?-i:[Oo]kta|OKTA)', '00[\\w=\\-]{40}', True),
    ('plaid-api-token', ('plaid',), 0.0, 'plaid', 'access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', False),
    ('plaid-client-id', ('plaid',), 3.5, 'plaid', '[a-z0-9]{24}', False),
    ('plaid-secret-key', ('plaid',), 3.5, 'plaid', '[a-z0-9]{30}', False),
    ('privateai-api-token', ('privateai', 'private_ai', 'private-ai'), 3.0, 'private[_-]?ai', '[a-z0-9]{32}', True),
    ('rapidapi-access-token', ('rapidapi',), 0.0, 'rapidapi', '[a-z0-9_-]{50}', False),
    ('sendbird-access-id', ('sendbird',), 0.0, 'sendbird', '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', False),
    ('sendbird-access-token', ('sendbird',), 0.0, 'sendbird', '[a-f0-9]{40}', False),
    ('sentry-access-token', ('sentry',), 3.0, 'sentry', '[a-f0-9]{64}', False),
    ('sidekiq-secret', ('bundle_enterprise__contribsys__com', 'bundle_gems__contribsys__com'), 0.0, 'BUNDLE_ENTERPRISE__CONTRIBSYS__COM|BUNDLE_GEMS__CONTRIBSYS__COM', '[a-f0-9]{8}:[a-f0-9]{8}', False),
    ('snyk-api-token', ('snyk',), 0.0, 'snyk[_.-]?(?:(?:api|oauth)[_.-]?)?(?:key|token)', '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', False),
    ('sonar-api-token', ('sonar',), 0.0, 'sonar[_.-]?(login|token)', '(?:squ_|sqp_|sqa_)?[a-z0-9=_\\-]{40}', False),
    ('squarespace-access-token', ('squarespace',), 0.0, 'squarespace', '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', False),
    ('sumologic-access-id', ('sumo',), 3.0, '(?-i:[Ss]umo|SUMO)', 'su[a-zA-Z0-9]{12}', True),
    ('sumologic-access-token', ('sumo',), 3.0, '(?-i:[Ss]umo|SUMO)', '[a-z0-9]{64}', False),
    ('travisci-access-token', ('travis',), 0.0, 'travis', '[a-z0-9]{22}', False),
    ('twitch-api-token', ('twitch',), 0.0, 'twitch', '[a-z0-9]{30}', False),
    ('twitter-access-secret', ('twitter',), 0.0, 'twitter', '[a-z0-9]{45}', False),
    ('twitter-access-token', ('twitter',), 0.0, 'twitter', '[0-9]{15,25}-[a-zA-Z0-9]{20,40}', False),
    ('twitter-api-key', ('twitter',), 0.0, 'twitter', '[a-z0-9]{25}', False),
    ('twitter-api-secret', ('twitter',), 0.0, 'twitter', '[a-z0-9]{50}', False),
    ('twitter-bearer-token', ('twitter',), 0.0, 'twitter', 'A{22}[a-zA-Z0-9%]{80,100}', False),
    ('typeform-api-token', ('tfp_',), 0.0, 'typeform', 'tfp_[a-z0-9\\-_\\.=]{59}', False),
    ('yandex-access-token', ('yandex',), 0.0, 'yandex', 't1\\.[A-Z0-9a-z_-]+[=]{0,2}\\.[A-Z0-9a-z_-]{86}[=]{0,2}', False),
    ('yandex-api-key', ('yandex',), 0.0, 'yandex', 'AQVN[A-Za-z0-9_\\-]{35,38}', False),
    ('yandex-aws-access-token', ('yandex',), 0.0, 'yandex', 'YC[a-zA-Z0-9_\\-]{38}', False),
    ('zendesk-secret-key', ('zendesk',), 0.0, 'zendesk', '[a-z0-9]{40}', False),
)
# fmt: on

#: gitleaks' end of a token (``utils.secretSuffix``): a quote, a space, ``;``, an escaped line
#: break or the end of the text. Its rules let a token through when anything else follows it.
GITLEAKS_END = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
#: Ours, in its place in every rule that ends so (issue 33): any character that cannot go on
#: with the token. A sentence's full stop, a list's comma, a call's ``)``, an XML element's
#: ``</``, a query string's ``&`` or a path's ``/`` after a token left it stored verbatim (a
#: held-out corpus found one). Not a letter, digit, ``_``, ``-``, ``+`` or ``=`` (a longer
#: identifier, or base64 the token is only part of), nor what follows a name in code rather
#: than a value: ``(``, ``[``, ``<T>``, ``.member``, ``::member`` (gitleaks' own false examples
#: hold ``GLC_UploadLightmap(``).
TOKEN_END = r"(?![A-Za-z0-9_+=(\[-]|[.:][A-Za-z0-9_:]|<[^/])"


def token_end(regex: str) -> str:
    """``regex`` (one of :data:`GITLEAKS`) with gitleaks' end of a token read as ours."""
    return regex.replace(GITLEAKS_END, TOKEN_END)


# gitleaks' operators, with PHP's ``??=`` and the ``+=`` of Make and shells (its own sample
# contexts list both as still to do).
_NAMED_SEP = (
    r"""(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?{1,2}=|\+=|,)[\x60'"\s=]{0,5}"""
)
_NAMED_END = TOKEN_END


def named_regex(ident: str, secret: str, case_sensitive: bool) -> str:
    """gitleaks' GenerateSemiGenericRegex: ``ident``, a separator, then ``secret`` as group 1."""
    ident = ident.replace("(?", "\0").replace("(", "(?:").replace("\0", "(?")  # no group
    if case_sensitive:
        return rf"(?i:(?:{ident}){_NAMED_SEP})({secret}){_NAMED_END}"
    return rf"(?i:(?:{ident}){_NAMED_SEP}({secret}){_NAMED_END})"


# The rules that would match ordinary text if run as gitleaks writes them (gitleaks runs a
# rule only on a file holding one of its keywords; a captured field is much smaller than a
# file, but a keyword anywhere in it is not enough here): the token must follow its keyword
# within a short distance. (kind, anchors, secret group, minimum entropy, regex, check) as
# :data:`wsd.redact.forms.EXTRA`. ``curl-auth-*``: gitleaks' unbounded ``.*`` between
# ``curl`` and the option bounded to 1,000 characters. ``kubernetes-secret-yaml``: every value
# of the ``data:``/``stringData:`` block of a manifest of ``kind: Secret`` (check "k8s").
# ``hashicorp-tf-password`` and ``freemius-secret-key`` (gitleaks: only in .tf/.hcl and .php
# files) run everywhere, the password checked as a password. Left out: ``generic-api-key``
# (the entropy net, :data:`wsd.redact.forms.NET_REGEX`, is its form with more names) and
# ``pkcs12-file`` (a rule on file names: a captured field has none).
_CURL_AUTH = (
    r"(?i:Authorization:[ \t]{0,5}(?:Basic[ \t]([a-z0-9+/]{8,}={0,3})|(?:Bearer|(?:Api-)?Token)"
    r"[ \t]([\w=~@.+/-]{8,})|([\w=~@.+/-]{8,}))|(?:(?:X-(?:[a-z]+-)?)?(?:Api-?)?(?:Key|Token)):"
    r"[ \t]{0,5}([\w=~@.+/-]{8,}))"
)
# fmt: off
GATED: tuple[tuple[str, tuple[str, ...], int, float, str, str], ...] = (
    ("sourcegraph_access_token", ("sgp_",), 1, 3.0,
     r"\b(sgp_(?:[a-fA-F0-9]{16}|local)_[a-fA-F0-9]{40}|sgp_[a-fA-F0-9]{40})\b", ""),
    ("sourcegraph_access_token", ("sourcegraph",), 1, 3.0,
     r"(?i:sourcegraph)[^\n]{0,60}?\b([a-fA-F0-9]{40})\b" + TOKEN_END, ""),
    ("vault_service_token", ("hvs.",), 1, 3.5, r"\b(hvs\.[\w-]{90,120})" + TOKEN_END, ""),
    ("vault_service_token", ("vault",), 1, 3.5,
     r"(?i:vault)[^\n]{0,60}?\b(s\.(?=[A-Za-z]{0,23}\d)[A-Za-z0-9]{24})" + TOKEN_END, ""),
    ("facebook_access_token", ("facebook", "fb_", "fb "), 1, 3.0,
     r"(?i:\b(\d{15,16}(\||%7C)[0-9a-z\-_]{27,40}))" + TOKEN_END, ""),
    ("atlassian_api_token", ("atlassian", "confluence", "jira"), 1, 3.5,
     named_regex("(?-i:ATLASSIAN|[Aa]tlassian)|(?-i:CONFLUENCE|[Cc]onfluence)|(?-i:JIRA|[Jj]ira)",
                 "[a-z0-9]{20}[a-f0-9]{4}", False), ""),
    ("curl_auth_header", ("curl",), 0, 2.75,
     rf"\bcurl\b[\s\S]{{0,1000}}?[ \t\n\r](?:-H|--header)(?:=|[ \t]{{0,5}})(?:\"{_CURL_AUTH}\"|'{_CURL_AUTH}')(?:\B|\s|\Z)", ""),
    ("curl_auth_user", ("curl",), 0, 2.0,
     r"\bcurl\b[\s\S]{0,1000}?[ \t\n\r](?:-u|--user)(?:=|[ \t]{0,5})(\"(:[^\"]{3,}|[^:\"]{3,}:|[^:\"]{3,}:[^\"]{3,})\"|'([^:']{3,}:[^']{3,})'|((?:\"[^\"]{3,}\"|'[^']{3,}'|[\w$@.-]+):(?:\"[^\"]{3,}\"|'[^']{3,}'|[\w${}@.-]+)))(?:\s|\Z)", "userpass"),
    ("kubernetes_secret_yaml", ("secret",), 2, 0.0,
     r"(?m)^([ \t]*)(?:data|stringData):[ \t]*\r?\n((?:\1[ \t]+[^\n]*(?:\r?\n|$)){1,200})", "k8s"),
    ("kubernetes_secret_yaml", ("secret",), 1, 0.0,
     r"\"(?:data|stringData)\"\s*:\s*\{([^{}]{1,8000})\}", "k8s"),
    ("hashicorp_tf_password", ("administrator_login_password", "password"), 1, 2.0,
     named_regex("administrator_login_password|password", '"[a-z0-9=_\\-]{8,20}"', False), "lenient"),
    ("freemius_secret_key", ("secret_key",), 1, 0.0,
     r"(?i:[\"']secret_key[\"']\s*=>\s*[\"'](sk_[\S]{29})[\"'])", ""),
)
# fmt: on
