"""Secret forms beyond gitleaks' rules (:mod:`wsd.redact.gitleaks`), and the entropy net.

:data:`EXTRA` holds forms issue 13 found stored verbatim that no unique gitleaks rule matches by
shape, :data:`FORMS` those of issue 20 (newer vendor prefixes, chat webhooks and bot tokens,
private keys that are not PEM, passwords in prose, a key split over a name and a value field,
a secret wrapped in base64), and :data:`NET_REGEX` the entropy net for assignment-shaped text
(gitleaks' ``generic-api-key``, with more names). Every entry is ``(kind, anchors, secret
group, minimum entropy, regex, check)``; anchors gate it as in :mod:`wsd.redact.gitleaks`.
``check`` says how a match is judged by :mod:`wsd.redact.rules`:

* ``""``: the secret group is a secret (if its entropy is high enough);
* ``"lenient"``: a password: anything but a placeholder or a reference;
* ``"cookie"``: each value of a cookie header; ``"k8s"``: each value of a Secret's data;
* ``"userpass"``: the password of ``user:password``;
* ``"random"`` / ``"mixed"``: the secret mixes two / all three of lower, upper case and digits;
* ``"prose"``: the word after "the password is" and the like, when it is not a word;
* ``"pair"``: the ``value`` field after a ``name`` field that names a secret;
* ``"b64"``: base64 that decodes to a secret (or, piped to a decoder, to a generated value).
"""

from __future__ import annotations

_B64 = r"[A-Za-z0-9+/]"
_END = r"(?![A-Za-z0-9_-])"
_START = r"(?<![A-Za-z0-9_-])"

# fmt: off
EXTRA: tuple[tuple[str, tuple[str, ...], int, float, str, str], ...] = (
    ("telegram_bot_token", (":A",), 1, 3.0,
     rf"(?<![\d:])(\d{{5,16}}:A[A-Za-z0-9_-]{{34}}){_END}", ""),
    ("discord_bot_token", ("discord", "Bot "), 1, 3.5,
     rf"{_START}([MNO][A-Za-z0-9_-]{{23,25}}\.[A-Za-z0-9_-]{{6}}\.[A-Za-z0-9_-]{{27,38}}){_END}",
     ""),
    ("mailgun_key", ("key-",), 1, 3.0, rf"{_START}(key-[0-9a-f]{{32}})(?![A-Za-z0-9])", ""),
    ("google_oauth_token", ("ya29.",), 1, 3.0,
     rf"{_START}(ya29\.[0-9A-Za-z_-]{{20,2048}}){_END}", ""),
    ("google_client_secret", ("GOCSPX-",), 1, 3.0, rf"(GOCSPX-[A-Za-z0-9_-]{{28}}){_END}", ""),
    ("atlassian_api_token", ("ATATT3",), 1, 3.5,
     r"(ATATT3[A-Za-z0-9_\-=]{150,250})(?![A-Za-z0-9_=-])", ""),
    ("tailscale_key", ("tskey-",), 1, 3.0,
     rf"{_START}(tskey-(?:[a-z]{{2,10}}-)?[A-Za-z0-9]{{6,}}-[A-Za-z0-9]{{10,}}){_END}", ""),
    ("doppler_token", ("dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."), 1, 3.0,
     rf"{_START}(dp\.(?:st|sa|ct|scim|audit)\.(?:[A-Za-z0-9_-]{{1,60}}\.)?[A-Za-z0-9]{{40,}})"
     rf"{_END}", ""),
    ("notion_api_token", ("secret_",), 1, 3.5,
     rf"{_START}(secret_[A-Za-z0-9]{{43}})(?![A-Za-z0-9])", ""),
    ("private_key", ("Private-Lines",), 1, 0.0,
     r"Private-Lines:[ \t]*\d+[ \t]*(?:\r?\n|(?:\\r)?\\n)((?:" + _B64
     + r"{1,128}={0,2}[ \t]*(?:\r?\n|(?:\\r)?\\n|$)){1,400}"
     r"(?:Private-(?:MAC|Hash):[ \t]*[0-9a-fA-F]+)?)", ""),
    ("basic_auth", ("-u", "--user"), 1, 0.0,
     r"(?<![\w-])(?:-u|--user)(?:[ \t]+|=)['\"]?[^\s:'\"]{1,100}:([^\s'\"]{3,200})", "lenient"),
    ("mysql_password", ("mysql", "mariadb"), 1, 0.0,
     r"\b(?:mysql|mariadb)\w*\b[^\n]{0,300}?[ \t]-p"
     r"('[^'\n]{1,100}'|\"[^\"\n]{1,100}\"|[^\s'\"-][^\s'\"]{0,100})", "lenient"),
    ("sshpass_password", ("sshpass",), 1, 0.0,
     r"\bsshpass\b[^\n]{0,200}?[ \t]-p[ \t]*('[^'\n]{1,200}'|\"[^\"\n]{1,200}\"|[^\s'\"]{1,200})",
     "lenient"),
    # Found leaking after the corpus (an attacker's own list): a password as a CLI flag.
    ("cli_password", ("login",), 1, 0.0,
     r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane)\b[^\n]{0,200}?\blogin\b"
     r"[^\n]{0,300}?[ \t](?:-p|--password)(?:[ \t]+|=)"
     r"('[^'\n]{1,200}'|\"[^\"\n]{1,200}\"|[^\s'\"-][^\s'\"]{0,200})", "lenient"),
    ("cli_password", ("redis-cli",), 1, 0.0,
     r"\bredis-cli\b[^\n]{0,300}?[ \t](?:-a|--pass)[ \t]+"
     r"('[^'\n]{1,200}'|\"[^\"\n]{1,200}\"|[^\s'\"-][^\s'\"]{0,200})", "lenient"),
    ("cli_password", ("openssl",), 1, 0.0,
     r"\bopenssl\b[^\n]{0,300}?[ \t]-k[ \t]+"
     r"('[^'\n]{1,200}'|\"[^\"\n]{1,200}\"|[^\s'\"-][^\s'\"]{0,200})", "lenient"),
    ("openssl_password", ("pass:",), 1, 0.0,
     r"(?<![\w-])-pass(?:in|out)?[ \t]+pass:(\S{1,200})", "lenient"),
    ("netrc_password", ("password", "passwd"), 1, 0.0,
     r"\b(?:login|user)[ \t]+\S{1,200}[ \t\r\n]+(?:password|passwd)[ \t]+(\S{1,200})", "lenient"),
    ("azure_sas_signature", ("sig=",), 1, 3.0, r"[?&;]sig=([A-Za-z0-9%+/=_-]{16,512})", ""),
    ("jwt", (".ey",), 1, 3.0,  # gitleaks' jwt: the first segment need not start "eyJ"
     r"\b(ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9/_-]{17,}\.(?:[a-zA-Z0-9/_-]{10,}={0,2})?)"
     r"(?![A-Za-z0-9_+=(\[-]|[.:][A-Za-z0-9_:]|<[^/])", ""),  # gitleaks.TOKEN_END
    ("slack_webhook", ("hooks.slack.com",), 1, 0.0,
     r"(?<![\w.-])(hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,300})", ""),
    ("cookie", ("cookie",), 1, 0.0, r"(?i:\b(?:set-)?cookie)[ \t]*:[ \t]*([^\r\n]{1,4096})",
     "cookie"),
)

#: Words that name a password in prose ("the wifi password is …"), and what may sit between
#: the word and its value ("for the router", "is now", ":").
_PROSE = (
    r"(?i:\b(?:password|passwd|passphrase|pass phrase|passcode|pwd|pin(?: code| number)?"
    r"|(?:private|secret|signing) key))"
    r"(?:[ \t]+(?i:for|to|of|on|at)[ \t]+[^\s:=]{1,40}(?:[ \t]+[^\s:=]{1,40}){0,2}?)?"
    r"(?:[ \t]+(?i:is now|is still|is set to|is|was|will be|has been set to|became|changed to)"
    r"(?:[ \t]*:)?[ \t]+|[ \t]*:[ \t]*)"
    r"(\"[^\"\n]{3,100}\"|'[^'\n]{3,100}'|“[^”\n]{3,100}”|`[^`\n]{3,100}`|\S{3,100}(?!\S))"
)
_Q = r"""(?:\\?["'])"""
#: ``{"name": "API_TOKEN", "value": "…"}``, ``"header_name": …, "header_value": …`` (JSON,
#: escaped JSON too), and YAML's ``- name: API_TOKEN`` / ``value: …``.
_PAIR_JSON = (
    rf"{_Q}(?:\w{{0,30}}[_-])?(?i:name|key|header|field|param|variable|var){_Q}[ \t]*[:=][ \t]*"
    rf"{_Q}(?P<n>[^\"'\\\n]{{1,80}}){_Q}[ \t]*[,;]?(?:\s|\\[nr]){{0,8}}"
    rf"{_Q}?(?:\w{{0,30}}[_-])?(?i:value|val){_Q}?[ \t]*[:=][ \t]*{_Q}(?P<v>[^\"'\\\n]{{1,1000}})"
)
_PAIR_YAML = (
    r"\bname:[ \t]*[\"']?(?P<n>[\w.-]{1,80})[\"']?[ \t]*\r?\n[ \t]*-?[ \t]*value:[ \t]*"
    r"[\"']?(?P<v>[^\s\"']{1,1000})"
)
#: A wallet's 12 to 24 words after a word naming them.
_MNEMONIC = (
    r"(?i:\b(?:seed|recovery|mnemonic|secret|backup|wallet)[ \t]+(?:phrase|words)|\bmnemonic)"
    r"[^\n]{0,20}?(?:[:=]|\bis\b|\bare\b)[ \t]*[\"'`]?((?:[a-z]{3,8}[ \t]+){11,23}[a-z]{3,8})"
)
#: A 64-hex-digit key (Ethereum, Solana seeds…) after a word naming it.
_HEXKEY = (
    r"(?i:priv(?:ate)?[ _-]?key|secret[ _-]?key|signing[ _-]?key|seed|wallet[ _-]?key)"
    r"[^\n]{0,30}?(?:[:=]|\bis\b)[ \t]*[\"'`]?((?:0x)?[0-9a-fA-F]{64})(?![0-9a-fA-F])"
)

FORMS: tuple[tuple[str, tuple[str, ...], int, float, str, str], ...] = (
    # -- newer vendor prefixes (vendor docs, GitHub's secret-scanning partner patterns) --------
    ("groq_api_key", ("gsk_",), 1, 3.0, rf"{_START}(gsk_[A-Za-z0-9]{{48,56}}){_END}", ""),
    ("xai_api_key", ("xai-",), 1, 3.0, rf"{_START}(xai-[A-Za-z0-9]{{60,100}}){_END}", ""),
    ("nvidia_api_key", ("nvapi-",), 1, 3.0, rf"{_START}(nvapi-[A-Za-z0-9_-]{{60,70}}){_END}", ""),
    ("replicate_api_token", ("r8_",), 1, 3.0, rf"{_START}(r8_[A-Za-z0-9]{{37}}){_END}", ""),
    ("tavily_api_key", ("tvly-",), 1, 3.0,
     rf"{_START}(tvly-(?:dev-|prod-)?[A-Za-z0-9]{{28,40}}){_END}", ""),
    ("sentry_org_token", ("sntrys_",), 1, 3.5,
     r"(?<![A-Za-z0-9])(sntrys_[A-Za-z0-9+/=_]{40,400})(?![A-Za-z0-9+/=_])", ""),
    ("fireworks_api_key", ("fw_",), 1, 3.5, rf"{_START}(fw_[A-Za-z0-9]{{20,40}}){_END}", "mixed"),
    ("supabase_token", ("sbp_", "sb_secret_"), 1, 3.0,
     rf"{_START}(sbp_(?:oauth_)?[a-f0-9]{{40}}|sb_secret_[A-Za-z0-9_-]{{20,64}}){_END}", ""),
    ("vercel_token", ("vcp_", "vci_", "vca_", "vcr_", "vck_"), 1, 3.5,
     rf"{_START}(vc[pickr]_[A-Za-z0-9]{{24,80}}){_END}", "random"),
    ("cloudflare_api_token", ("cfk_", "cfut_", "cfat_"), 1, 3.5,
     rf"{_START}((?:cfk|cfut|cfat)_[A-Za-z0-9]{{40,50}}){_END}", ""),
    ("docker_hub_token", ("dckr_pat_", "dckr_oat_"), 1, 3.0,
     rf"{_START}(dckr_(?:pat|oat)_[A-Za-z0-9_-]{{24,80}}){_END}", ""),
    ("figma_token", ("figd_",), 1, 3.0, rf"{_START}(figd_[A-Za-z0-9_-]{{40,60}}){_END}", ""),
    ("posthog_personal_key", ("phx_",), 1, 3.5, rf"{_START}(phx_[A-Za-z0-9]{{40,50}}){_END}", ""),
    ("langsmith_api_key", ("lsv2_",), 1, 3.0,
     rf"{_START}(lsv2_(?:pt|sk)_[a-f0-9]{{32}}_[a-f0-9]{{10}}){_END}", ""),
    ("pinecone_api_key", ("pcsk_",), 1, 3.5, rf"{_START}(pcsk_[A-Za-z0-9_]{{50,100}}){_END}", ""),
    ("cerebras_api_key", ("csk-",), 1, 3.0, rf"{_START}(csk-[a-z0-9]{{40,56}}){_END}", ""),
    ("elevenlabs_api_key", ("sk_",), 1, 3.0, rf"{_START}(sk_[a-f0-9]{{48}}){_END}", ""),
    ("resend_api_key", ("re_",), 1, 3.5, rf"{_START}(re_[A-Za-z0-9]{{8}}_[A-Za-z0-9]{{24}}){_END}",
     "mixed"),
    ("netlify_token", ("nfp_",), 1, 3.5, rf"{_START}(nfp_[A-Za-z0-9]{{36,40}}){_END}", ""),
    ("render_api_key", ("rnd_",), 1, 3.5, rf"{_START}(rnd_[A-Za-z0-9]{{32}}){_END}", "mixed"),
    ("linear_oauth_token", ("lin_oauth_",), 1, 3.0, rf"(lin_oauth_[a-f0-9]{{64}}){_END}", ""),
    ("together_api_key", ("tgp_v1_",), 1, 3.0, rf"(tgp_v1_[A-Za-z0-9_-]{{40,64}}){_END}", ""),
    ("square_secret", ("sq0csp-",), 1, 3.0, rf"(sq0csp-[A-Za-z0-9_-]{{43}}){_END}", ""),
    ("google_refresh_token", ("1//0",), 1, 3.0,
     r"(?<![A-Za-z0-9/])(1//0[A-Za-z0-9_-]{40,300})(?![A-Za-z0-9_-])", ""),
    ("mapbox_secret_token", ("sk.eyJ",), 1, 3.0,
     rf"{_START}(sk\.eyJ[A-Za-z0-9_-]{{20,}}\.[A-Za-z0-9_-]{{20,}}){_END}", ""),
    # -- chat platforms: webhooks and bot tokens ----------------------------------------------
    ("discord_webhook", ("discord",), 1, 3.0,
     r"(?i:discord(?:app)?\.com)/api/(?:v\d+/)?webhooks/\d{5,25}/([A-Za-z0-9_-]{40,100})", ""),
    ("telegram_bot_token", ("/bot",), 1, 3.0,
     r"/bot(\d{5,16}:[A-Za-z0-9_-]{30,50})(?![A-Za-z0-9_-])", ""),
    ("telegram_bot_token", ("telegram",), 1, 3.0,
     r"(?<![\d:])(\d{8,12}:[A-Za-z0-9_-]{35})(?![A-Za-z0-9_-])", ""),
    ("teams_webhook", ("office.com/webhook", "office365.com/webhook"), 1, 0.0,
     r"(?i:\.office(?:365)?\.com)/webhook(?:b2)?/([A-Za-z0-9@/_.-]{20,500})", ""),
    ("chat_webhook", ("/hooks/",), 1, 3.0,
     r"/hooks/((?:[A-Za-z0-9_-]{12,100}/)?[A-Za-z0-9_-]{20,100})(?![A-Za-z0-9_-])", "random"),
    ("google_chat_webhook", ("chat.googleapis.com",), 1, 3.0,
     r"chat\.googleapis\.com/[^\s\"']{0,300}?[?&](?:token|key)=([A-Za-z0-9_%=-]{20,300})", ""),
    # -- private keys that are not PEM ---------------------------------------------------------
    ("private_key", ("kty",), 1, 0.0,
     r"""\\?["'](?:d|p|q|dp|dq|qi|k)\\?["']\s*:\s*\\?["']([A-Za-z0-9_-]{16,})\\?["']""", ""),
    ("private_key", ("PrivateKey", "PresharedKey"), 1, 0.0,
     r"(?:Private|Preshared)Key[ \t]*=[ \t]*([A-Za-z0-9+/]{42,43}=)", ""),
    ("private_key", ("private", "priv", "secret", "seed", "signing", "wallet"), 1, 3.0, _HEXKEY,
     ""),
    ("private_key", ("keypair", "secret", "private", "solana"), 1, 0.0,
     r"(\[[ \t\r\n]*(?:\d{1,3}[ \t\r\n]*,[ \t\r\n]*){63}\d{1,3}[ \t\r\n]*\])", ""),
    ("mnemonic", ("phrase", "mnemonic", "seed words", "recovery words"), 1, 0.0, _MNEMONIC, ""),
    # -- passwords in prose, split fields, base64 ----------------------------------------------
    ("secret_assignment", ("password", "passwd", "passphrase", "pass phrase", "passcode",
                           "pwd", "pin", "private key", "secret key", "signing key"), 1, 0.0,
     _PROSE, "prose"),
    ("secret_assignment", ("value",), 0, 0.0, _PAIR_JSON, "pair"),
    ("secret_assignment", ("value:",), 0, 0.0, _PAIR_YAML, "pair"),
    ("encoded_secret", ("base64", "b64", "atob", "basic "), 1, 0.0,
     r"(?<![A-Za-z0-9+/_=-])([A-Za-z0-9+/_-]{16,4096}={0,2})(?![A-Za-z0-9+/=_-])", "b64"),
)

#: regex -> the lower-case words every match starts with (tried only where they are).
STARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (_PROSE, ("pass", "pwd", "pin", "private", "secret", "signing")),
    (_HEXKEY, ("priv", "secret", "signing", "seed", "wallet")),
    (_MNEMONIC, ("seed", "recovery", "mnemonic", "secret", "backup", "wallet")),
)

#: Provider-name rules of the same shape as gitleaks' (:func:`wsd.redact.gitleaks.named_regex`) for
#: providers gitleaks has none for: (kind, keywords, minimum entropy, name, secret, case).
MORE_NAMED: tuple[tuple[str, tuple[str, ...], float, str, str, bool], ...] = (
    ("mistral_api_key", ("mistral",), 3.5, "mistral", "[a-z0-9]{32}", False),
    ("deepgram_api_key", ("deepgram",), 3.0, "deepgram", "[a-f0-9]{40}", False),
    ("assemblyai_api_key", ("assemblyai", "assembly_ai"), 3.0, "assembly_?ai", "[a-f0-9]{32}",
     False),
    ("wandb_api_key", ("wandb",), 3.0, "wandb", "[a-f0-9]{40}", False),
    ("vercel_token", ("vercel",), 3.5, "vercel", "[a-z0-9]{24}", False),
    ("groq_api_key", ("groq",), 3.5, "groq", "[A-Za-z0-9_]{40,60}", True),
    ("mattermost_webhook", ("mattermost",), 3.0, "mattermost", "[a-z0-9]{26}", False),
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
#: gitleaks' generic-api-key finds these too (issue 33: its own true examples, stored verbatim
#: here): a type between the name and ``=`` (``var apiToken string = "…"``), PHP's ``.=`` and
#: ``??=``, ``+=``, a call's ``("API_TOKEN", "…")`` (a comma, before a quoted value only: not
#: a list of words in prose) and an XML element ``<apiToken>…</apiToken>`` (``>``, the value
#: maybe on the next line, ended by ``<``).
NET_REGEX = (
    r"(?i:"
    + "|".join(NET_WORDS)
    + r")[\w.-]{0,20}[\"'`]?(?:[ \t]{1,3}[A-Za-z]\w{0,15}(?=[ \t]{0,3}=[^=>]))?[ \t]{0,3}"
    r"(?:=|:{1,3}=|:|=>|\?{1,2}=|[.+]=|,(?=[ \t]{0,5}[\"'`])|>\s{0,12})[ \t]{0,5}"
    r"(?:(?P<q>[\"'`])|(?=[\w/+~.=-]))"
    r"(?P<v>(?(q)[^\"'`\\\n]{4,150}|[\w.=+/~%@!#^*-]{4,150}))"
    r"(?(q)(?P=q)|(?=[\s;,&)\]}\"'`<]|\\[nr]|$))"
)
NET_ENTROPY = 3.5
