// Builds a claude-mem database with claude-mem's own code (run with bun: the code needs bun:sqlite).
//
//   bun make_claude_mem_db.cjs --package DIR --out FILE [--empty]
//
// DIR is the unpacked npm package (`npm pack claude-mem@13.25.3`, the folder holding plugin/).
// The database is made exactly as claude-mem's worker makes ~/.claude-mem/claude-mem.db: the
// bundled worker's DatabaseManager.initialize() opens the connection (WAL, foreign keys,
// incremental auto-vacuum), runs SessionStore's migrations and SessionSearch's FTS5 set-up.
// Unless --empty, rows are then written through the same SessionStore methods the worker uses
// (createSDKSession, saveUserPrompt, ensureMemorySessionIdRegistered, upsertToolUse,
// storeObservation, storeSummary, linkToolUsesToObservation, markSessionCompleted).
// storeObservation/storeSummary/upsertToolUse take a timestamp override (epoch ms); session
// start/end times and prompt times have none, so those are moved with UPDATEs (listed below).
// make_claude_mem_db.py drives this script; see README.md.
"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

function parseArgs(argv) {
  const out = { empty: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--empty") out.empty = true;
    else if (a === "--package") out.pkg = argv[++i];
    else if (a === "--out") out.out = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  if (!out.pkg || !out.out) throw new Error("usage: --package DIR --out FILE [--empty]");
  return out;
}

const args = parseArgs(process.argv.slice(2));
if (typeof Bun === "undefined") throw new Error("run this with bun (claude-mem needs bun:sqlite)");

// claude-mem reads its paths at load time: point its data dir at a fresh scratch folder
// (settings.json there turns Chroma off; cloud sync stays off without a token).
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "claude-mem-fixture-"));
const dataDir = path.join(scratch, "data");
fs.mkdirSync(dataDir);
fs.writeFileSync(path.join(dataDir, "settings.json"), JSON.stringify({ CLAUDE_MEM_CHROMA_ENABLED: "false" }));
for (const k of Object.keys(process.env)) if (k.startsWith("CLAUDE_MEM_")) delete process.env[k];
process.env.CLAUDE_MEM_DATA_DIR = dataDir;

const workerPath = path.resolve(args.pkg, "plugin", "scripts", "worker-service.cjs");
const { WorkerService } = require(workerPath);

const MODEL = "claude-haiku-4-5-20251001"; // claude-mem's default CLAUDE_MEM_MODEL
const WORKER_PORT = 37777; // claude-mem's default worker port
const FAKE_KEY =
  "sk-ant-api03-FAKEfixtureKEYnotREAL1gCObohKg_sxd6LFyJSNRhDGwDMg3dVHdQeC_r-hX8-NZG8vPCJC3iJBSIDF7CNreknpgb4RAA";

const ms = (iso) => {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) throw new Error(`bad date ${iso}`);
  return t;
};

// Three sessions in two projects, February to June 2026.
const SESSIONS = [
  {
    contentId: "7c1e2f4a-3b5d-4e6f-8a9b-0c1d2e3f4a5b",
    memoryId: "b2f0c7d1-8e4a-4f3b-9c2d-1a0e5f6b7c8d",
    project: "heron-api",
    cwd: "/home/ada/src/heron-api",
    customTitle: undefined,
    started: "2026-02-03T09:14:05.120Z",
    completed: "2026-02-03T10:02:41.907Z",
    prompts: [
      { n: 1, at: "2026-02-03T09:14:05.388Z", text: "The login endpoint sometimes returns 500 after a token refresh. Find out why and fix it." },
      { n: 2, at: "2026-02-03T09:41:12.004Z", text: "Good. Now add rate limiting to /auth/refresh, 10 per minute per user." },
    ],
    toolUses: [
      {
        toolUseId: "toolu_01HeronRead0000000000001",
        toolName: "Read",
        at: "2026-02-03T09:15:30.000Z",
        promptNumber: 1,
        input: { file_path: "/home/ada/src/heron-api/src/heron/auth/tokens.py" },
        response: { type: "text", file: { filePath: "/home/ada/src/heron-api/src/heron/auth/tokens.py", numLines: 212 } },
        linkTo: 0, // index into this session's observations
      },
      {
        toolUseId: "toolu_01HeronEdit0000000000002",
        toolName: "Edit",
        at: "2026-02-03T09:27:48.000Z",
        promptNumber: 1,
        input: {
          file_path: "/home/ada/src/heron-api/src/heron/auth/tokens.py",
          old_string: "if token.expires_at < now:",
          new_string: "if token.expires_at <= now:",
        },
        response: { filePath: "/home/ada/src/heron-api/src/heron/auth/tokens.py", structuredPatch: [] },
        linkTo: 1,
      },
    ],
    observations: [
      {
        at: "2026-02-03T09:18:22.310Z", promptNumber: 1, tokens: 1840,
        obs: {
          type: "discovery",
          title: "Refresh tokens are compared against naive local time",
          subtitle: "tokens.py mixes timezone-aware and naive datetimes when checking expiry",
          narrative:
            "While tracing the intermittent 500 on /auth/login, the refresh path in tokens.py turned out to build `now` with datetime.now() (naive, local time) and compare it with expires_at, which the ORM returns timezone-aware in UTC. Python raises TypeError on that comparison, which the view turns into a 500. It only shows up for users whose access token expired and who still hold a refresh token.",
          facts: [
            "src/heron/auth/tokens.py builds `now` with datetime.now() (naive)",
            "Token.expires_at is stored as timestamptz and loaded timezone-aware",
            "Comparing naive and aware datetimes raises TypeError, surfaced as HTTP 500",
          ],
          concepts: ["how-it-works", "gotcha"],
          files_read: ["src/heron/auth/tokens.py", "src/heron/models/token.py"],
          files_modified: [],
        },
      },
      {
        at: "2026-02-03T09:29:57.642Z", promptNumber: 1, tokens: 2210,
        obs: {
          type: "bugfix",
          title: "Fix 500 on login after token refresh",
          subtitle: "Use timezone-aware UTC now and an inclusive expiry check",
          narrative:
            "Replaced datetime.now() with datetime.now(timezone.utc) in the refresh path and made the expiry check inclusive (<=) so a token expiring exactly at the boundary is refreshed rather than rejected. Added a regression test that freezes time one second after expiry.",
          facts: [
            "tokens.py now uses datetime.now(timezone.utc)",
            "Expiry check changed from < to <=",
            "Regression test tests/auth/test_refresh.py::test_refresh_after_expiry added",
          ],
          concepts: ["problem-solution", "what-changed"],
          files_read: ["src/heron/auth/tokens.py"],
          files_modified: ["src/heron/auth/tokens.py", "tests/auth/test_refresh.py"],
        },
      },
      {
        at: "2026-02-03T09:44:03.051Z", promptNumber: 2, tokens: 1312,
        obs: {
          type: "decision",
          title: "Rate-limit /auth/refresh in Redis with a sliding window",
          subtitle: "Chosen over an in-process limiter because the API runs 4 replicas",
          narrative:
            "An in-process token bucket would allow 4x the intended rate behind the load balancer, so the limiter keeps a per-user sorted set in the existing Redis instance (sliding 60 s window, 10 requests). Redis being down fails open and logs a warning rather than locking users out.",
          facts: [
            "Limit: 10 refreshes per user per 60 seconds",
            "State lives in Redis sorted sets keyed ratelimit:refresh:<user_id>",
            "Limiter fails open if Redis is unreachable",
          ],
          concepts: ["trade-off", "why-it-exists"],
          files_read: ["src/heron/settings.py", "deploy/docker-compose.yml"],
          files_modified: [],
        },
      },
      {
        at: "2026-02-03T09:58:36.777Z", promptNumber: 2, tokens: 2675,
        obs: {
          type: "feature",
          title: "Add sliding-window rate limiter for token refresh",
          subtitle: "New RateLimiter middleware applied to POST /auth/refresh",
          narrative:
            "Implemented heron.middleware.ratelimit.RateLimiter using ZADD/ZREMRANGEBYSCORE/ZCARD in a MULTI block, wired it to POST /auth/refresh, and return 429 with a Retry-After header when the window is full. Tests use fakeredis.",
          facts: [
            "RateLimiter lives in src/heron/middleware/ratelimit.py",
            "Exceeding the limit returns 429 with Retry-After",
            "Tests use fakeredis instead of a live Redis",
          ],
          concepts: ["pattern", "what-changed"],
          files_read: ["src/heron/app.py"],
          files_modified: ["src/heron/middleware/ratelimit.py", "src/heron/app.py", "tests/middleware/test_ratelimit.py"],
        },
      },
      {
        at: "2026-02-03T10:01:10.204Z", promptNumber: 2, tokens: 640,
        obs: {
          type: "change",
          title: "Document the refresh rate limit in the API reference",
          subtitle: "docs/api/auth.md gains a Rate limits section",
          narrative: "Added a short Rate limits section to docs/api/auth.md describing the 429 response and the Retry-After header.",
          facts: ["docs/api/auth.md documents the 10/min refresh limit"],
          concepts: ["what-changed"],
          files_read: [],
          files_modified: ["docs/api/auth.md"],
        },
      },
    ],
    summaries: [
      {
        at: "2026-02-03T10:02:30.518Z", promptNumber: 2, tokens: 3120,
        summary: {
          request: "Fix the intermittent 500 on login after a token refresh, then rate-limit /auth/refresh to 10 per minute per user.",
          investigated: "The refresh path in src/heron/auth/tokens.py, the Token model, settings and the docker-compose Redis service.",
          learned: "The 500 came from comparing a naive datetime.now() with a timezone-aware expires_at. The API runs 4 replicas, so an in-process limiter would not hold the limit.",
          completed: "Expiry check fixed with timezone-aware UTC and an inclusive comparison, plus a regression test. Redis sliding-window RateLimiter added to POST /auth/refresh returning 429 + Retry-After, documented in docs/api/auth.md.",
          next_steps: "Add a metric for 429s on /auth/refresh and watch it for a week before tightening the limit.",
          notes: "Limiter fails open when Redis is down; revisit if that becomes an abuse vector.",
          files_read: ["src/heron/auth/tokens.py", "src/heron/models/token.py", "src/heron/settings.py", "src/heron/app.py"],
          files_edited: ["src/heron/auth/tokens.py", "src/heron/middleware/ratelimit.py", "src/heron/app.py", "docs/api/auth.md"],
        },
      },
    ],
  },
  {
    contentId: "e4d3c2b1-a0f9-4e8d-b7c6-a5b4c3d2e1f0",
    memoryId: "0a9b8c7d-6e5f-4a3b-8c1d-0e9f8a7b6c5d",
    project: "heron-api",
    cwd: "/home/ada/src/heron-api",
    customTitle: "Split settings module",
    started: "2026-04-17T14:02:11.650Z",
    completed: "2026-04-17T15:31:58.023Z",
    prompts: [
      { n: 1, at: "2026-04-17T14:02:11.902Z", text: "settings.py is 900 lines. Split it into a package without changing behaviour, and check why staging deploys pick up the wrong Stripe key." },
    ],
    toolUses: [],
    observations: [
      {
        at: "2026-04-17T14:20:44.118Z", promptNumber: 1, tokens: 2980,
        obs: {
          type: "refactor",
          title: "Split settings.py into a heron.settings package",
          subtitle: "base, database, auth and payments modules; public names re-exported",
          narrative:
            "Moved the 900-line settings.py into heron/settings/{base,database,auth,payments}.py. __init__.py re-exports every public name so existing `from heron.settings import X` imports keep working; no values changed.",
          facts: [
            "heron/settings/__init__.py re-exports all public settings",
            "No setting value changed; test suite passes unchanged",
          ],
          concepts: ["pattern"],
          files_read: ["src/heron/settings.py"],
          files_modified: [
            "src/heron/settings/__init__.py",
            "src/heron/settings/base.py",
            "src/heron/settings/database.py",
            "src/heron/settings/auth.py",
            "src/heron/settings/payments.py",
          ],
          agent_type: "general-purpose",
          agent_id: "agent_4f1c9e2b7a",
        },
      },
      {
        at: "2026-04-17T14:47:09.335Z", promptNumber: 1, tokens: 1575,
        obs: {
          type: "bugfix",
          title: "Staging read a hard-coded Anthropic key from deploy/staging.env",
          subtitle: "The key was committed in plain text; moved to the secret store",
          narrative:
            `deploy/staging.env had ANTHROPIC_API_KEY=${FAKE_KEY} committed in plain text, and it shadowed the value from the secret store because env files load last. Removed the line, loaded the key from the secret store only, and flagged the key for rotation.`,
          facts: [
            "deploy/staging.env contained a plain-text ANTHROPIC_API_KEY",
            "Env files were loaded after the secret store and overrode it",
            "Key flagged for rotation",
          ],
          concepts: ["problem-solution", "gotcha"],
          files_read: ["deploy/staging.env", "src/heron/settings/payments.py"],
          files_modified: ["deploy/staging.env", "src/heron/settings/base.py"],
        },
      },
      {
        at: "2026-04-17T15:05:52.870Z", promptNumber: 1, tokens: 410,
        obs: {
          type: "discovery",
          title: "Stripe webhook secret is read twice at import time",
          subtitle: "payments.py and billing/webhooks.py each call os.environ directly",
          narrative: null,
          facts: [
            "src/heron/settings/payments.py reads STRIPE_WEBHOOK_SECRET",
            "src/heron/billing/webhooks.py reads it again with os.environ[...]",
          ],
          concepts: ["how-it-works"],
          files_read: ["src/heron/billing/webhooks.py", "src/heron/settings/payments.py"],
          files_modified: [],
        },
      },
      {
        at: "2026-04-17T15:29:14.461Z", promptNumber: 1, tokens: 505,
        obs: {
          type: "decision",
          title: "Keep settings as plain module constants, no pydantic-settings",
          subtitle: "Validation library rejected for now to keep the refactor behaviour-neutral",
          narrative:
            "Considered moving to pydantic-settings while splitting the module, but that would change parsing of several values (booleans from env, comma lists). Deferred so this change stays a pure move.",
          facts: [],
          concepts: ["trade-off"],
          files_read: [],
          files_modified: [],
        },
      },
    ],
    summaries: [
      {
        at: "2026-04-17T15:31:40.112Z", promptNumber: 1, tokens: 2890,
        summary: {
          request: "Split the 900-line settings.py into a package without behaviour change, and find why staging used the wrong key.",
          investigated: "settings.py, deploy/staging.env, the payments settings and billing webhooks.",
          learned: "Env files load after the secret store and override it; a plain-text key was committed in deploy/staging.env.",
          completed: "settings split into heron/settings/ with re-exports; staging.env no longer carries the key; key flagged for rotation.",
          next_steps: "Rotate the exposed key and add a pre-commit secret scan for deploy/*.env.",
          notes: null,
          files_read: ["src/heron/settings.py", "deploy/staging.env"],
          files_edited: ["src/heron/settings/__init__.py", "deploy/staging.env"],
        },
      },
    ],
  },
  {
    contentId: "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d",
    memoryId: "f1e2d3c4-b5a6-4978-8a6b-5c4d3e2f1a0b",
    project: "lumen-notes",
    cwd: "/home/zoe/projects/lumen-notes",
    customTitle: undefined,
    started: "2026-06-22T07:45:00.431Z",
    completed: null, // still active: no completed_at
    prompts: [
      { n: 1, at: "2026-06-22T07:45:00.702Z", text: "Note titles with accents are sorted wrong and search misses \"café\" when I type \"cafe\". Fix both." },
      { n: 2, at: "2026-06-22T08:20:33.190Z", text: "Also make the export keep the original file names." },
    ],
    toolUses: [],
    observations: [
      {
        at: "2026-06-22T08:03:27.904Z", promptNumber: 1, tokens: 2302,
        obs: {
          type: "feature",
          title: "Accent-insensitive search and collation for note titles — «café» ≈ «cafe»",
          subtitle: "NFKD folding for the search index; ICU collation (de-AT) for sorting",
          narrative:
            "Titles are now folded with NFKD and stripped of combining marks before indexing, so \"café\", \"Café\" and \"cafe\" match; sorting uses an ICU collator so \"Łódź\", \"Zoë\" and \"Ärger\" land where a reader expects. Checked with titles such as 東京メモ, Ærøskøbing and naïve façade ✓.",
          facts: [
            "Search keys are NFKD-folded with combining marks removed",
            "Sorting uses PyICU Collator for locale de-AT",
            "東京メモ sorts after Latin titles",
          ],
          concepts: ["how-it-works", "gotcha"],
          files_read: ["lumen/search/index.py"],
          files_modified: ["lumen/search/index.py", "lumen/notes/sort.py", "tests/test_unicode_titles.py"],
        },
      },
      {
        at: "2026-06-22T08:31:15.555Z", promptNumber: 2, tokens: 977,
        obs: {
          type: "change",
          title: "Export keeps original note file names",
          subtitle: "Exporter no longer slugifies names; only path separators are replaced",
          narrative:
            "The exporter used to slugify file names (which dropped accents). It now keeps the original name and only replaces '/' and NUL, adding a numeric suffix on collisions.",
          facts: ["Exported names keep accents and spaces", "Collisions get ' (2)', ' (3)' suffixes"],
          concepts: ["what-changed"],
          files_read: ["lumen/export/zipfile.py"],
          files_modified: ["lumen/export/zipfile.py"],
        },
      },
      {
        at: "2026-06-22T08:36:02.048Z", promptNumber: 2, tokens: 388,
        obs: {
          type: "discovery",
          title: "macOS returns file names in NFD",
          subtitle: "os.listdir on APFS gives decomposed forms, so names must be NFC-normalised before comparing",
          narrative:
            "Round-tripping an export on macOS produced duplicate notes because APFS hands back NFD names (e + U+0301) while the database holds NFC. Names are normalised to NFC on import.",
          facts: ["APFS returns NFD file names", "Import normalises names to NFC"],
          concepts: ["gotcha"],
          files_read: ["lumen/importer.py"],
          files_modified: [],
        },
      },
    ],
    summaries: [
      {
        at: "2026-06-22T08:07:44.300Z", promptNumber: 1, tokens: 1766,
        summary: {
          request: "Fix accent-sensitive sorting and search for note titles.",
          investigated: "The search indexer and the note sorting helper.",
          learned: "Titles were compared byte-wise; NFKD folding fixes search and an ICU collator fixes order.",
          completed: "Accent-insensitive search and locale-aware sorting with tests for café/cafe, Zoë, Łódź and 東京メモ.",
          next_steps: "Handle the export file names (next prompt).",
          notes: "Sorting locale is fixed to de-AT for now.",
          files_read: ["lumen/search/index.py"],
          files_edited: ["lumen/search/index.py", "lumen/notes/sort.py"],
        },
      },
    ],
  },
];

function populate(store, db) {
  const moved = []; // the UPDATEs done because claude-mem's methods stamp "now"
  for (const s of SESSIONS) {
    // What the UserPromptSubmit hook's /api/sessions/init route does.
    const sessionDbId = store.createSDKSession(s.contentId, s.project, s.prompts[0].text, s.customTitle, "claude");
    for (const p of s.prompts) {
      store.saveUserPrompt(s.contentId, p.n, p.text, sessionDbId);
    }
    // The SDK agent registers the memory session id before storing anything.
    store.ensureMemorySessionIdRegistered(sessionDbId, s.memoryId, WORKER_PORT);
    // PostToolUse backups (tool_input/tool_response are JSON text, as the worker stores them).
    for (const t of s.toolUses) {
      store.upsertToolUse({
        toolUseId: t.toolUseId,
        contentSessionId: s.contentId,
        sessionDbId,
        project: s.project,
        platformSource: "claude",
        toolName: t.toolName,
        toolInput: JSON.stringify(t.input),
        toolResponse: JSON.stringify(t.response),
        cwd: s.cwd,
        promptNumber: t.promptNumber,
        createdAtEpoch: ms(t.at),
      });
    }
    const obsIds = [];
    for (const o of s.observations) {
      const r = store.storeObservation(s.memoryId, s.project, o.obs, o.promptNumber, o.tokens, ms(o.at), MODEL);
      obsIds.push(r.id);
    }
    for (const t of s.toolUses) {
      store.linkToolUsesToObservation({
        contentSessionId: s.contentId,
        toolUseIds: [t.toolUseId],
        observationId: obsIds[t.linkTo],
        memorySessionId: s.memoryId,
      });
    }
    for (const x of s.summaries) {
      store.storeSummary(s.memoryId, s.project, x.summary, x.promptNumber, x.tokens, ms(x.at));
    }
    if (s.completed) store.markSessionCompleted(sessionDbId);

    // Timestamps the store only sets to "now".
    const st = new Date(ms(s.started));
    if (s.completed) {
      const en = new Date(ms(s.completed));
      db.prepare(
        "UPDATE sdk_sessions SET started_at = ?, started_at_epoch = ?, completed_at = ?, completed_at_epoch = ? WHERE id = ?",
      ).run(st.toISOString(), st.getTime(), en.toISOString(), en.getTime(), sessionDbId);
    } else {
      db.prepare("UPDATE sdk_sessions SET started_at = ?, started_at_epoch = ? WHERE id = ?").run(
        st.toISOString(), st.getTime(), sessionDbId,
      );
    }
    moved.push(`sdk_sessions ${sessionDbId}`);
    for (const p of s.prompts) {
      const at = new Date(ms(p.at));
      db.prepare(
        "UPDATE user_prompts SET created_at = ?, created_at_epoch = ? WHERE session_db_id = ? AND prompt_number = ?",
      ).run(at.toISOString(), at.getTime(), sessionDbId, p.n);
      moved.push(`user_prompts ${sessionDbId}/${p.n}`);
    }
  }
  return moved;
}

async function main() {
  const svc = new WorkerService();
  await svc.dbManager.initialize(); // connection + SessionStore migrations + SessionSearch FTS5
  const store = svc.dbManager.getSessionStore();
  const db = svc.dbManager.getConnection();
  if (!args.empty) {
    const moved = populate(store, db);
    console.error(`dates moved by UPDATE: ${moved.join(", ")}`);
  }
  const v = db.prepare("SELECT sqlite_version() AS v, (SELECT journal_mode FROM pragma_journal_mode) AS j").get();
  db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  const dbFile = path.join(dataDir, "claude-mem.db");
  await svc.dbManager.close();
  for (const sfx of ["-wal", "-shm"]) {
    const f = dbFile + sfx;
    if (fs.existsSync(f) && fs.statSync(f).size > 0 && sfx === "-wal") throw new Error(`${f} not empty after checkpoint`);
  }
  fs.mkdirSync(path.dirname(path.resolve(args.out)), { recursive: true });
  fs.copyFileSync(dbFile, args.out);
  fs.rmSync(scratch, { recursive: true, force: true });
  console.error(`wrote ${args.out} (bun ${Bun.version}, SQLite ${v.v}, journal_mode ${v.j})`);
}

main().then(
  () => process.exit(0), // the worker object holds handlers that would keep bun alive
  (e) => {
    console.error(e && e.stack ? e.stack : e);
    process.exit(1);
  },
);
