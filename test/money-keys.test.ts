// BYOK provider keys, tested for real (the envelope and master-key rotation are in
// money-key-envelope.test.ts): the keys page over HTTP in both formats,
// which endpoint a run calls with which key, what a refused, moved or revoked key does
// to a run, and a leak test that looks for one distinctive key in everything the system
// answered, logged, queued, sent to a model or stored.
// Real Postgres, Redis and BullMQ workers; providers are fake LLM servers over HTTP.
import { randomBytes } from "node:crypto";
import { lookup } from "node:dns/promises";
import { hostname } from "node:os";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.ts";
import { type FakeLlm, type Script, startFakeLlm } from "../src/dev/fake-llm.ts";
import { DecryptError } from "../src/lib/secrets.ts";
import { configureKeyring } from "../src/services/money/keyring.ts";
import { checkBaseUrl, checkResolvedUrl, openKey, PROVIDER_URLS } from "../src/services/money/keys.ts";
import { requestsFor, runIdOf, stepsOf } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool } from "./helpers/agents.ts";
import { act, login, makeWorld, md, testConfig, testPrisma, type World, waitFor } from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";
import { databaseDump, redisDump } from "./helpers/dumps.ts";
import { type Inbox, startInbox } from "./helpers/inbox.ts";
import { fakeKey, keyRow, last4 } from "./helpers/keys.ts";
import { captureLog } from "./helpers/logs.ts";

const db = testPrisma;
const KEYS_PAGE = "/u/alice/settings/api-keys";
const SHARED_KEY = "test-key";
const usage = { prompt_tokens: 100, completion_tokens: 10 };

// Everything the app and the worker log, kept for the leak test.
const appLog: string[] = [];
const workerLog = captureLog("trace");

let app: FastifyInstance;
let env: AgentEnv;
// Mail is on: what the worker mails (a failed run below) is scanned like everything else.
let inbox: Inbox;
const providers: FakeLlm[] = [];

beforeAll(async () => {
  // The real app, logging at trace level into appLog instead of stdout.
  app = await buildApp({
    config: testConfig({ LOG_LEVEL: "trace" }),
    prisma: db(),
    logger: { stream: { write: (line: string) => void appLog.push(line) } },
  });
  await app.ready();
  // One runtime for the whole file, so every event and job of every test lands under one
  // queue prefix; its log callback is what the leak test reads of the worker.
  inbox = await startInbox();
  env = await startAgents("keys", { LLM_API_KEY: SHARED_KEY, SMTP_URL: inbox.url }, [], workerLog.logger);
});
afterAll(async () => {
  await env.close();
  await app.close();
  await inbox.close();
  for (const p of providers) await p.close();
});

/** A second model provider: a fake LLM server at its own URL, the base URL of a BYOK key. */
async function provider(script: Script = []): Promise<FakeLlm> {
  const p = await startFakeLlm({ script });
  providers.push(p);
  return p;
}

/** Alice adds a key over the markdown API; returns its row. */
async function addKey(w: World, p: { key: string; label?: string; provider?: string; base_url?: string }) {
  const label = p.label ?? "Work";
  const res = await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/add_api_key`, {
    provider: "openai_compatible",
    ...p,
    label,
  });
  expect(res.statusCode, res.body).toBe(201);
  return db().agentApiKey.findFirstOrThrow({ where: { tenantId: w.tenant.id, label } });
}

/** Alice starts a task for her agent over the markdown API and waits until the run ends. */
async function runTask(w: World, handle: string, task = "Look around") {
  const res = await md(app, w, w.alice, "POST", `/subagents/${handle}/run/actions/run_task`, { task });
  expect(res.statusCode, res.body).toBe(201);
  const id = runIdOf(String(res.headers.location));
  return waitFor(
    () =>
      db().subagentTaskRun.findFirst({
        where: { id, status: { in: ["completed", "failed", "cancelled", "timed_out"] } },
      }),
    15_000,
  );
}

/** navigate, then finish: two model calls. */
const shortScript = () => [
  { ...tool("navigate", { path: "/studios/general" }), usage },
  { ...tool("finish", { message: "done" }), usage },
];

describe("a ciphertext moved to another row", () => {
  it("does not decrypt there: the run fails before any model call, and the key test says why", async () => {
    const w = await makeWorld();
    const p = await provider(shortScript());
    const keyA = fakeKey("sk-row-a");
    const a = await addKey(w, { label: "Key A", base_url: p.url, key: keyA });
    const b = await addKey(w, { label: "Key B", base_url: p.url, key: fakeKey("sk-row-b") });
    // Someone with database access swaps A's sealed key into B's row.
    await db().$executeRaw`
      UPDATE agent_api_keys SET encrypted_key = src.encrypted_key, key_version = src.key_version
      FROM agent_api_keys src WHERE src.id = ${a.id} AND agent_api_keys.id = ${b.id}`;
    expect(Buffer.from((await keyRow(b.id)).encryptedKey).equals(Buffer.from(a.encryptedKey))).toBe(true);
    expect(() => openKey(a)).not.toThrow();
    const moved = await keyRow(b.id);
    expect(() => openKey(moved)).toThrow(DecryptError);

    const scout = await makeAgent(w, w.alice, "scout", { api_key_id: b.id });
    const run = await runTask(w, "scout");
    expect(run).toMatchObject({
      status: "failed",
      stopReason: "api_key_unavailable",
      error: `This agent's API key (id ${b.id}) cannot be decrypted with the server's keys (APP_ENCRYPTION_KEYS): add it again.`,
    });
    expect(run.agentId).toBe(scout.id);
    // No model call at all: not to the key's provider (with A's key), not to the shared endpoint.
    expect(p.requests).toEqual([]);
    expect(requestsFor(env, w)).toEqual([]);
    const page = (await md(app, w, w.alice, "GET", `/subagents/scout/runs/${run.id}`)).body;
    expect(page).toContain("cannot be decrypted");

    // Any request would be refused, so "refused" would mean it called out with some key.
    p.setAcceptedKeys([]);
    const res = await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/test_api_key`, { id: b.id });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain("✗ “Key B”");
    expect(res.body).toContain("cannot be decrypted with the server's keys");
    expect(await keyRow(b.id)).toMatchObject({ lastTestOk: false, authFailedAt: null });
    expect(res.body).not.toContain(keyA);
  });
});

describe("the keys page over HTTP", () => {
  it("markdown: adds each kind of provider; the list shows only the last four characters", async () => {
    const w = await makeWorld();
    const kinds = [
      { label: "Personal OpenAI", provider: "openai", key: fakeKey("sk-openai"), url: PROVIDER_URLS.openai },
      {
        label: "Personal Anthropic",
        provider: "anthropic",
        key: fakeKey("sk-ant"),
        url: "https://api.anthropic.com/v1/",
      },
      {
        label: "Self-hosted",
        provider: "openai_compatible",
        key: fakeKey("sk-vllm"),
        url: "https://llm.example.com/v1",
      },
    ];
    for (const k of kinds) {
      const res = await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/add_api_key`, {
        label: k.label,
        provider: k.provider,
        key: k.key,
        ...(k.provider === "openai_compatible" && { base_url: k.url }),
      });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.headers.location).toBe(KEYS_PAGE);
      expect(res.body).toContain(
        `Added “${k.label}” (…${last4(k.key)}). Test it, then pick it on an agent's page.`,
      );
      const row = await db().agentApiKey.findFirstOrThrow({
        where: { tenantId: w.tenant.id, label: k.label },
      });
      expect(row).toMatchObject({
        ownerId: w.alice.id,
        provider: k.provider,
        baseUrl: k.url,
        keyHint: last4(k.key),
      });
      expect(Buffer.from(row.encryptedKey).includes(Buffer.from(k.key))).toBe(false);
      expect(openKey(row)).toBe(k.key);
    }
    const page = (await md(app, w, w.alice, "GET", KEYS_PAGE)).body;
    for (const k of kinds) {
      expect(page).toContain(`### ${k.label} · `);
      expect(page).toContain(`\`…${last4(k.key)}\``);
      // Not the key, nor any part of it beyond the last four characters.
      expect(page).not.toContain(k.key.slice(0, -4));
    }
    expect(page).toContain("OpenAI at `https://api.openai.com/v1`");
    expect(page).toContain("Anthropic at `https://api.anthropic.com/v1/`");
    expect(page).toContain("OpenAI-compatible at `https://llm.example.com/v1`");
    expect(page.match(/not tested yet/g)).toHaveLength(3);
    expect(page).toMatch(/- `add_api_key` \(label: string, provider: openai\|anthropic\|openai_compatible/);
  });

  it("markdown: each bad field is a 400 naming it, and the key is never echoed", async () => {
    const w = await makeWorld();
    const key = fakeKey("sk-rejected");
    const cases: [Record<string, string>, string, string][] = [
      [{ provider: "openai_compatible" }, "base_url", "needed for an OpenAI-compatible provider"],
      [
        { provider: "openai", base_url: "https://llm.example.com/v1" },
        "base_url",
        "leave empty for openai: its URL is https://api.openai.com/v1",
      ],
      [{ provider: "openai_compatible", base_url: "not a url" }, "base_url", "must be a URL"],
      [
        { provider: "openai_compatible", base_url: "ftp://llm.example.com" },
        "base_url",
        "must start with https://",
      ],
      [
        { provider: "openai_compatible", base_url: "https://me:pw@llm.example.com/v1" },
        "base_url",
        "must not contain credentials",
      ],
      [{ provider: "google" }, "provider", ""],
      [{ provider: "openai", key: "sk-1234" }, "key", "at least 8 characters"],
      [{ provider: "openai", key: `${key} ${key}` }, "key", "no spaces"],
      [{ provider: "openai", key: "" }, "key", ""],
    ];
    for (const [params, field, message] of cases) {
      const res = await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/add_api_key`, {
        label: "Bad",
        key,
        ...params,
      });
      expect(res.statusCode, JSON.stringify(params)).toBe(400);
      expect(res.body).toContain(`- \`${field}\`: ${message}`);
      expect(res.body).not.toContain(key);
    }
    expect(await db().agentApiKey.count({ where: { tenantId: w.tenant.id } })).toBe(0);
  });

  it("HTML: the key is a password field; a failed post shows the form again without the key", async () => {
    const w = await makeWorld();
    const key = fakeKey("sk-form");
    const browser = await login(app, w, w.alice);
    const page = await browser.get(KEYS_PAGE);
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(
      /<input type="password" id="[\w-]+-key" name="key" value="" autocomplete="off" required>/,
    );
    expect(page.body).not.toMatch(/<(input|textarea)(?![^>]*type="password")[^>]*name="key"/);

    const failed = await browser.post(`${KEYS_PAGE}/actions/add_api_key`, {
      label: "From the form",
      provider: "openai_compatible",
      base_url: "",
      key,
    });
    expect(failed.statusCode).toBe(400);
    expect(issuesOf(failed.body).base_url).toBe("needed for an OpenAI-compatible provider");
    // The rest of the input is kept, so only the key has to be pasted again.
    expect(failed.body).toContain('value="From the form"');
    expect(failed.body).toMatch(/<input type="password" id="[\w-]+-key" name="key" value=""/);
    expect(failed.body).not.toContain(key);
    expect(JSON.stringify(failed.headers)).not.toContain(key);

    const ok = await browser.post(`${KEYS_PAGE}/actions/add_api_key`, {
      label: "From the form",
      provider: "openai_compatible",
      base_url: "https://llm.example.com/v1",
      key,
    });
    expect(ok.statusCode).toBe(303);
    expect(ok.headers.location).toBe(KEYS_PAGE);
    expect(JSON.stringify(ok.headers)).not.toContain(key);
    const after = await browser.get(KEYS_PAGE);
    expect(after.body).toContain(`Added “From the form” (…${last4(key)})`);
    expect(after.body).toContain(`<code>…${last4(key)}</code>`);
    expect(after.body).not.toContain(key);
    const row = await db().agentApiKey.findFirstOrThrow({ where: { tenantId: w.tenant.id } });
    expect(openKey(row)).toBe(key);
  });

  it("only their owner sees, tests, revokes or picks keys", async () => {
    const w = await makeWorld();
    const key = await addKey(w, { base_url: "https://llm.example.com/v1", key: fakeKey() });
    expect((await md(app, w, w.bob, "GET", KEYS_PAGE)).statusCode).toBe(404);
    const bobBrowser = await login(app, w, w.bob);
    expect((await bobBrowser.get(KEYS_PAGE)).statusCode).toBe(404);
    const intrude = await md(app, w, w.bob, "POST", `${KEYS_PAGE}/actions/add_api_key`, {
      label: "Planted",
      provider: "openai",
      key: fakeKey(),
    });
    expect(intrude.statusCode).toBe(404);
    for (const action of ["test_api_key", "revoke_api_key"]) {
      const res = await md(app, w, w.bob, "POST", `/u/bob/settings/api-keys/actions/${action}`, {
        id: key.id,
      });
      expect(res.statusCode, action).toBe(404);
      expect(res.body).toContain(`No API key ${key.id} of yours`);
    }

    await makeAgent(w, w.bob, "bobbot");
    const steal = await md(app, w, w.bob, "POST", "/subagents/bobbot/actions/set_agent_api_key", {
      api_key: key.id,
    });
    expect(steal.statusCode).toBe(400);
    expect(steal.body).toContain("- `api_key`: not one of your keys");
    const bobbot = await db().user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "bobbot" } });
    expect(bobbot.agentConfig).not.toHaveProperty("api_key_id");
    // Nor on alice's agent: it is not his to configure.
    await makeAgent(w, w.alice, "scout");
    const other = await md(app, w, w.bob, "POST", "/subagents/scout/actions/set_agent_api_key", {
      api_key: key.id,
    });
    expect(other.statusCode).toBe(404);
    expect(await keyRow(key.id)).toMatchObject({ revokedAt: null, lastTestedAt: null });
    expect(await db().agentApiKey.count({ where: { tenantId: w.tenant.id } })).toBe(1);
  });

  it("the owner picks a key for an agent and back to shared; a revoked key cannot be picked", async () => {
    const w = await makeWorld();
    const key = fakeKey();
    const k = await addKey(w, { base_url: "https://llm.example.com/v1", key });
    const scout = await makeAgent(w, w.alice, "scout");
    const set = await md(app, w, w.alice, "POST", "/subagents/scout/actions/set_agent_api_key", {
      api_key: k.id,
    });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.body).toContain(`@scout now uses “Work” (…${last4(key)})`);
    expect((await db().user.findUniqueOrThrow({ where: { id: scout.id } })).agentConfig).toMatchObject({
      api_key_id: k.id,
    });
    expect(set.body).toContain(`| model calls paid by | your key “Work” (\`…${last4(key)}\`) |`);

    // The browser form is a select of the owner's keys, the current one selected.
    const browser = await login(app, w, w.alice);
    const html = (await browser.get("/subagents/scout")).body;
    expect(html).toContain(`<option value="${k.id}" selected>Work (…${last4(key)})</option>`);
    const back = await browser.post("/subagents/scout/actions/set_agent_api_key", { api_key: "shared" });
    expect(back.statusCode).toBe(303);
    expect((await db().user.findUniqueOrThrow({ where: { id: scout.id } })).agentConfig).not.toHaveProperty(
      "api_key_id",
    );
    expect((await browser.get("/subagents/scout")).body).toContain("@scout now uses the shared endpoint");

    await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/revoke_api_key`, { id: k.id });
    const revoked = await md(app, w, w.alice, "POST", "/subagents/scout/actions/set_agent_api_key", {
      api_key: k.id,
    });
    expect(revoked.statusCode).toBe(400);
    expect(revoked.body).toContain("- `api_key`: “Work” is revoked");
  });

  it("agents never manage keys: not listed, and refused when tried with an agent's token", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout");
    const key = fakeKey("sk-agent-tried");
    // An agent's own settings page resolves, but none of the key actions are its to use.
    const own = await md(app, w, scout, "GET", "/u/scout/settings/api-keys");
    expect(own.statusCode).toBe(200);
    expect(own.body).not.toMatch(/`(add|test|revoke)_api_key`/);
    const res = await md(app, w, scout, "POST", "/u/scout/settings/api-keys/actions/add_api_key", {
      label: "Mine now",
      provider: "openai",
      key,
    });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("You cannot use `add_api_key` here");
    expect(res.body).not.toContain(key);
    expect((await md(app, w, scout, "GET", KEYS_PAGE)).statusCode).toBe(404);
    const onOwner = await md(app, w, scout, "POST", `${KEYS_PAGE}/actions/add_api_key`, {
      label: "Mine now",
      provider: "openai",
      key,
    });
    expect(onOwner.statusCode).toBe(404);
    expect(await db().agentApiKey.count({ where: { tenantId: w.tenant.id } })).toBe(0);
    // Refused outright, not queued for approval with the key in its params.
    expect(await db().agentPendingAction.count({ where: { tenantId: w.tenant.id } })).toBe(0);
  });
});

// The key test and every run call the key's base URL from the server: in production it
// must not reach the server's own network (cloud metadata, internal services).
describe("the base URL policy", () => {
  /** Runs `fn` with private addresses refused, as in production; the file's keyring comes back after. */
  async function withPrivateRefused(fn: () => Promise<void> | void) {
    configureKeyring({ ...testConfig(), BYOK_ALLOW_PRIVATE_URLS: "0" });
    try {
      await fn();
    } finally {
      configureKeyring(testConfig());
    }
  }

  it("refuses loopback, private, link-local and internal names, however they are spelled", async () => {
    const refused = [
      "http://localhost:11434/v1",
      "http://LOCALHOST./v1",
      "http://ollama.localhost/v1",
      "http://127.0.0.1:8000/v1",
      "http://127.0.0.1./v1",
      "http://2130706433/v1",
      "http://0x7f000001/v1",
      "http://0.0.0.0/v1",
      "http://10.1.2.3/v1",
      "http://172.20.0.5/v1",
      "http://192.168.1.10/v1",
      "http://100.64.0.1/v1",
      "http://169.254.169.254/latest",
      "http://metadata.google.internal/v1",
      "http://metadata.google.internal./v1",
      "http://printer.local/v1",
      "http://[::1]/v1",
      "http://[::]/v1",
      "http://[::ffff:127.0.0.1]/v1",
      "http://[fd12:3456::1]/v1",
      "http://[fe80::1]/v1",
      "http://[febf::1]/v1",
    ];
    await withPrivateRefused(() => {
      for (const url of refused) expect(checkBaseUrl(url), url).toMatch(/must be a public address/);
      for (const url of ["https://api.together.xyz/v1", "https://8.8.8.8/v1", "https://[2606:4700::1111]/v1"])
        expect(checkBaseUrl(url), url).toBeNull();
    });
    // Outside production (and with BYOK_ALLOW_PRIVATE_URLS=1) a self-hosted model is fine.
    expect(checkBaseUrl("http://127.0.0.1:8000/v1")).toBeNull();
    expect(checkBaseUrl("http://localhost:11434/v1")).toBeNull();
  });

  // The machine's own host name resolves to a loopback address (see /etc/hosts) while
  // reading as a public name: what a DNS record pointing at 127.0.0.1 would look like.
  const hostName = hostname();
  const loopbackName = async () =>
    !["localhost", ""].includes(hostName) &&
    (await lookup(hostName, { all: true }).catch(() => [])).some((a) => a.address.startsWith("127."));

  it("refuses, at use, a public-looking name that resolves to a private address", async (t) => {
    if (!(await loopbackName())) t.skip();
    const w = await makeWorld();
    const p = await provider(shortScript());
    const key = fakeKey();
    const base = `http://${hostName}:${new URL(p.url).port}/v1`;
    await withPrivateRefused(async () => {
      // The written name passes the check at entry…
      expect(checkBaseUrl(base)).toBeNull();
      expect(await checkResolvedUrl(base)).toMatch(/resolves to a private address \(127\./);
      const k = await addKey(w, { base_url: base, key });
      // …but a test does not call it, and neither does a run.
      const tested = await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/test_api_key`, { id: k.id });
      expect(tested.body).toMatch(/Not tested: .* resolves to a private address/);
      await makeAgent(w, w.alice, "scout", { api_key_id: k.id });
      const run = await runTask(w, "scout");
      expect(run).toMatchObject({ status: "failed", stopReason: "api_key_unavailable" });
      expect(run?.error).toMatch(/points at .* resolves to a private address/);
    });
    expect(p.requests).toEqual([]);
  });

  it("is on by default in production, and answers a 400 naming base_url", async () => {
    const w = await makeWorld();
    configureKeyring({ ...testConfig(), NODE_ENV: "production" });
    try {
      const res = await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/add_api_key`, {
        label: "Metadata",
        provider: "openai_compatible",
        base_url: "http://169.254.169.254/latest",
        key: fakeKey(),
      });
      expect(res.statusCode).toBe(400);
      expect(res.body).toContain("- `base_url`: must be a public address");
    } finally {
      configureKeyring(testConfig());
    }
    expect(await db().agentApiKey.count({ where: { tenantId: w.tenant.id } })).toBe(0);
  });
});

describe("test_api_key", () => {
  it("lists the provider's models with the key: works, refused, works again", async () => {
    const w = await makeWorld();
    const p = await provider();
    const key = fakeKey();
    const k = await addKey(w, { base_url: p.url, key });
    const test = () => md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/test_api_key`, { id: k.id });

    p.setAcceptedKeys([key]);
    const ok = await test();
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.body).toContain(`✓ “Work” (…${last4(key)}): The key works: the provider lists 1 model(s).`);
    const okRow = await keyRow(k.id);
    expect(okRow).toMatchObject({ lastTestOk: true, authFailedAt: null, authError: null });
    expect(okRow.lastTestedAt).toBeInstanceOf(Date);
    expect(ok.body).toMatch(/✓ works \(tested /);

    // The provider now knows only someone else's key: this one is refused.
    p.setAcceptedKeys([fakeKey()]);
    const refused = await test();
    expect(refused.statusCode).toBe(200);
    expect(refused.body).toContain(`✗ “Work” (…${last4(key)}): The provider refused the key (401).`);
    const refusedRow = await keyRow(k.id);
    expect(refusedRow).toMatchObject({ lastTestOk: false, authError: "The provider refused the key (401)." });
    expect(refusedRow.authFailedAt).toBeInstanceOf(Date);
    expect(refused.body).toContain("**refused by the provider**");

    // A passing test clears the refusal, through the browser form this time.
    p.setAcceptedKeys([key]);
    const browser = await login(app, w, w.alice);
    const form = await browser.post(`${KEYS_PAGE}/actions/test_api_key`, { id: k.id });
    expect(form.statusCode).toBe(303);
    expect((await browser.get(KEYS_PAGE)).body).toContain("The key works");
    expect(await keyRow(k.id)).toMatchObject({ lastTestOk: true, authFailedAt: null, authError: null });
  });

  it("an unreachable provider is a failed test, not a refusal; a revoked key cannot be tested", async () => {
    const w = await makeWorld();
    const gone = await startFakeLlm();
    await gone.close();
    const k = await addKey(w, { base_url: gone.url, key: fakeKey() });
    const res = await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/test_api_key`, { id: k.id });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(`Could not reach ${gone.url}.`);
    expect(await keyRow(k.id)).toMatchObject({ lastTestOk: false, authFailedAt: null });
    expect(res.body).toContain("✗ test failed");

    await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/revoke_api_key`, { id: k.id });
    const again = await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/test_api_key`, { id: k.id });
    expect(again.statusCode).toBe(409);
    expect(again.body).toContain("“Work” is revoked");
  });
});

describe("which endpoint a run calls, with which key", () => {
  it("an agent with a key calls its provider with it; one without calls the shared endpoint", async () => {
    const w = await makeWorld();
    const p = await provider(shortScript());
    const key = fakeKey();
    const k = await addKey(w, { base_url: p.url, key });
    await makeAgent(w, w.alice, "scout");
    const set = await md(app, w, w.alice, "POST", "/subagents/scout/actions/set_agent_api_key", {
      api_key: k.id,
    });
    expect(set.statusCode, set.body).toBe(200);

    const run = await runTask(w, "scout");
    expect(run).toMatchObject({ status: "completed", inputTokens: 200, outputTokens: 20 });
    expect(p.requests).toHaveLength(2);
    for (const r of p.requests) expect(r.headers.authorization).toBe(`Bearer ${key}`);
    expect(requestsFor(env, w)).toEqual([]);

    await makeAgent(w, w.alice, "helper");
    env.llm.setScript(shortScript());
    const shared = await runTask(w, "helper");
    expect(shared.status).toBe("completed");
    const sharedCalls = requestsFor(env, w);
    expect(sharedCalls).toHaveLength(2);
    for (const r of sharedCalls) expect(r.headers.authorization).toBe(`Bearer ${SHARED_KEY}`);
    expect(p.requests).toHaveLength(2);

    // The ledger says who paid for each call, and the key's totals add up its rows.
    const byKey = await db().llmUsage.findMany({ where: { runId: run.id } });
    expect(byKey.map((u) => u.apiKeyId)).toEqual([k.id, k.id]);
    const byShared = await db().llmUsage.findMany({ where: { runId: shared.id } });
    expect(byShared.map((u) => u.apiKeyId)).toEqual([null, null]);
    const totals = await keyRow(k.id);
    expect(totals).toMatchObject({ totalCalls: 2, totalInputTokens: 200n, totalOutputTokens: 20n });
    expect(totals.lastUsedAt).toBeInstanceOf(Date);
    const page = (await md(app, w, w.alice, "GET", KEYS_PAGE)).body;
    expect(page).toMatch(
      /Usage: 2 calls · 220 tokens · \$[\d.]+ · last used [^·]+ · used by \[@scout\]\(\/subagents\/scout\)/,
    );
  });

  it("a key id in an agent's config that is not its owner's key is never used", async () => {
    const w = await makeWorld();
    const p = await provider(shortScript());
    const alices = await addKey(w, { base_url: p.url, key: fakeKey() });
    // Written straight into the config: set_agent_api_key would refuse it (tested above).
    await makeAgent(w, w.bob, "bobbot", { api_key_id: alices.id });
    const res = await md(app, w, w.bob, "POST", "/subagents/bobbot/run/actions/run_task", { task: "Spend" });
    expect(res.statusCode, res.body).toBe(201);
    const run = await waitFor(() =>
      db().subagentTaskRun.findFirst({
        where: { id: runIdOf(String(res.headers.location)), completedAt: { not: null } },
      }),
    );
    expect(run).toMatchObject({ status: "failed", stopReason: "api_key_unavailable" });
    expect(p.requests).toEqual([]);
    expect(requestsFor(env, w)).toEqual([]);
    expect(await keyRow(alices.id)).toMatchObject({ totalCalls: 0, lastUsedAt: null });
  });

  it("the provider refuses the key mid-run: llm_auth naming the key, never the key itself", async () => {
    const w = await makeWorld();
    const key = fakeKey();
    // Providers echo the refused key in their message; the run must not keep it.
    const p = await provider([{ status: 401, content: `Incorrect API key provided: ${key}.` }]);
    const k = await addKey(w, { label: "Team key", base_url: p.url, key });
    await makeAgent(w, w.alice, "scout", { api_key_id: k.id });

    const run = await runTask(w, "scout");
    expect(run).toMatchObject({ status: "failed", stopReason: "llm_auth" });
    expect(p.requests).toHaveLength(1);
    expect(p.requests[0]!.headers.authorization).toBe(`Bearer ${key}`);
    expect(run.error).toContain(`The provider refused the API key “Team key” (…${last4(key)})`);
    expect(run.error).toContain("Incorrect API key provided: [key].");
    expect(run.error).not.toContain(key);

    const marked = await keyRow(k.id);
    expect(marked.authFailedAt).toBeInstanceOf(Date);
    expect(marked.authError).toContain("[key]");
    expect(marked.authError).not.toContain(key);
    const keys = (await md(app, w, w.alice, "GET", KEYS_PAGE)).body;
    expect(keys).toMatch(/### Team key · [^\n]*\n\n[^\n]*\nStatus: \*\*refused by the provider\*\*/);
    const agent = (await md(app, w, w.alice, "GET", "/subagents/scout")).body;
    expect(agent).toContain(`your key “Team key” (\`…${last4(key)}\`) — **refused by the provider**`);
    const runPage = (await md(app, w, w.alice, "GET", `/subagents/scout/runs/${run.id}`)).body;
    // (markdown-escaped on the page)
    expect(runPage).toContain(`The provider refused the API key “Team key” \\(…${last4(key)}\\)`);
    expect(runPage).not.toContain(key);
    for (const s of await stepsOf(run.id)) expect(JSON.stringify(s)).not.toContain(key);
  });
});

describe("revoking a key", () => {
  it("wipes the ciphertext, names the agents that used it, and their next runs fail clearly", async () => {
    const w = await makeWorld();
    const p = await provider(shortScript());
    const key = fakeKey();
    const k = await addKey(w, { base_url: p.url, key });
    await makeAgent(w, w.alice, "scout", { api_key_id: k.id });
    await makeAgent(w, w.alice, "helper", { api_key_id: k.id });
    await makeAgent(w, w.alice, "idle");

    const res = await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/revoke_api_key`, { id: k.id });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain(
      "Revoked “Work”. @helper, @scout used it: pick another key on their pages, or their runs fail.",
    );
    const row = await keyRow(k.id);
    expect(row.revokedAt).toBeInstanceOf(Date);
    expect(row.encryptedKey).toHaveLength(0);
    expect(res.body).toMatch(/### Work · [^\n]*\n\n[^\n]*\nStatus: revoked /);

    const run = await runTask(w, "scout");
    expect(run).toMatchObject({
      status: "failed",
      stopReason: "api_key_unavailable",
      error: `The API key “Work” (…${last4(key)}) was revoked: pick another key, or the shared endpoint, on the agent's page.`,
    });
    expect(p.requests).toEqual([]);
    expect(requestsFor(env, w)).toEqual([]);
    const agent = (await md(app, w, w.alice, "GET", "/subagents/scout")).body;
    expect(agent).toContain("**a revoked or deleted key: its runs fail until you pick another**");
    // No test or revoke buttons for a revoked key, and revoking twice is a conflict.
    const browser = await login(app, w, w.alice);
    expect((await browser.get(KEYS_PAGE)).body).not.toContain("Revoke “Work”");
    const twice = await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/revoke_api_key`, { id: k.id });
    expect(twice.statusCode).toBe(409);

    // A key row that is gone altogether fails the same way.
    await db().agentApiKey.delete({ where: { id: k.id } });
    const missing = await runTask(w, "helper");
    expect(missing).toMatchObject({
      status: "failed",
      stopReason: "api_key_unavailable",
      error: "The API key this agent is set to use no longer exists: pick another on its page.",
    });
  });
});

describe("revoking a key during a run", () => {
  it("stops the run at its next model call: a leaked key stops being used at once", async () => {
    const w = await makeWorld();
    const key = fakeKey();
    let keyId = "";
    // The owner revokes the key while the provider answers the first call.
    const p = await provider(async (_req, n) => {
      if (n === 0) {
        const res = await md(app, w, w.alice, "POST", `${KEYS_PAGE}/actions/revoke_api_key`, {
          key_id: keyId,
        });
        expect(res.statusCode, res.body).toBe(200);
      }
      return { ...tool("navigate", { path: "/studios/general" }), usage };
    });
    const k = await addKey(w, { base_url: p.url, key });
    keyId = k.id;
    await makeAgent(w, w.alice, "scout", { api_key_id: k.id });
    const run = await runTask(w, "scout");
    expect(run).toMatchObject({ status: "failed", stopReason: "api_key_unavailable" });
    expect(run?.error).toContain(`“Work” (…${last4(key)}) was revoked during the run`);
    // The call in flight was paid for and recorded; no second call was made.
    expect(p.requests).toHaveLength(1);
    expect(await db().llmUsage.count({ where: { runId: run!.id, apiKeyId: k.id } })).toBe(1);
  });
});

describe("the leak test", () => {
  it("a distinctive key appears in no response, log, queue, prompt or row", async () => {
    const key = `sk-LEAKCHECK-${randomBytes(16).toString("hex")}`;
    // The key in the encodings a careless serializer would use.
    const forms = [key, Buffer.from(key).toString("hex"), Buffer.from(key).toString("base64")];
    const w = await makeWorld("leak");
    const p = await provider();
    const seen: LightMyRequestResponse[] = [];
    const keep = (r: LightMyRequestResponse) => {
      seen.push(r);
      return r;
    };
    const mdAs = async (method: "GET" | "POST", url: string, body?: unknown, who = w.alice) =>
      keep(await md(app, w, who, method, url, body));
    const browser = await login(app, w, w.alice);
    const get = async (url: string) => keep(await browser.get(url));
    const post = async (url: string, form: Record<string, string>) => keep(await browser.post(url, form));
    /** Each step must really have happened, or the scan below proves nothing. */
    const expectStatus = async (res: Promise<LightMyRequestResponse>, status: number) => {
      const r = await res;
      expect(r.statusCode, `${r.statusCode}: ${r.body.slice(0, 300)}`).toBe(status);
      return r;
    };
    const scout = await makeAgent(w, w.alice, "scout");
    // Alice hears of failed runs by mail at once: the refused run below mails her.
    await db().user.update({ where: { id: w.alice.id }, data: { reachPrefs: { run_failed: "email" } } });
    // Another key, pasted into a note by mistake: it stays in the note, and reaches neither
    // a model nor a run record (the agent reads the note below).
    const pasted = `sk-PASTED-${randomBytes(16).toString("hex")}`;
    const oops = await act(w, w.alice, "/studios/general", "create_note", { text: `For now use ${pasted}` });

    // Adding it: refused attempts first (their error pages must not echo it), in both formats.
    const add = `${KEYS_PAGE}/actions/add_api_key`;
    const compatible = { provider: "openai_compatible", base_url: p.url, key };
    await expectStatus(mdAs("POST", add, { label: "Leak", provider: "openai_compatible", key }), 400);
    await expectStatus(post(add, { label: "Leak", provider: "openai", base_url: p.url, key }), 400);
    await expectStatus(mdAs("POST", add, { label: "Leak md", ...compatible }), 201);
    await expectStatus(post(add, { label: "Leak form", ...compatible }), 303);
    // Its agent trying to add it with its own token.
    const agentAdd = "/u/scout/settings/api-keys/actions/add_api_key";
    await expectStatus(mdAs("POST", agentAdd, { label: "x", provider: "openai", key }, scout), 403);
    const keyNamed = (label: string) =>
      db().agentApiKey.findFirstOrThrow({ where: { tenantId: w.tenant.id, label } });
    const [k, formKey] = await Promise.all([keyNamed("Leak md"), keyNamed("Leak form")]);

    // Testing it: accepted, refused (both formats).
    const testUrl = `${KEYS_PAGE}/actions/test_api_key`;
    p.setAcceptedKeys([key]);
    expect((await expectStatus(mdAs("POST", testUrl, { id: k.id }), 200)).body).toContain("The key works");
    await expectStatus(post(testUrl, { key_id: formKey.id }), 303);
    p.setAcceptedKeys(["sk-someone-else-entirely"]);
    expect((await mdAs("POST", testUrl, { id: k.id })).body).toContain("The provider refused the key");
    p.setAcceptedKeys(null);

    // Picking it for the agent, both formats.
    const setKey = "/subagents/scout/actions/set_agent_api_key";
    await expectStatus(post(setKey, { api_key: formKey.id }), 303);
    await expectStatus(mdAs("POST", setKey, { api_key: k.id }), 200);

    // A run that works (it even looks for its owner's keys page), then one the provider
    // refuses with the key in its error message, so the scrubbing is on the path.
    p.setScript([
      tool("navigate", { path: KEYS_PAGE }),
      tool("navigate", { path: oops.location }),
      tool("navigate", { path: "/studios/general" }),
      tool("execute_action", {
        action: "create_note",
        params: { title: "Leak check", text: "Nothing to see" },
      }),
      tool("finish", { message: "done" }),
    ]);
    const runTaskUrl = "/subagents/scout/run/actions/run_task";
    const started = await expectStatus(mdAs("POST", runTaskUrl, { task: "Write a note" }), 201);
    const ok = await waitFor(
      () =>
        db().subagentTaskRun.findFirst({
          where: { id: runIdOf(String(started.headers.location)), completedAt: { not: null } },
        }),
      15_000,
    );
    expect(ok.status).toBe("completed");
    p.setScript([{ status: 401, content: `Incorrect API key provided: ${key}. See your dashboard.` }]);
    await expectStatus(post(runTaskUrl, { task: "Again" }), 303);
    const refused = await waitFor(
      () =>
        db().subagentTaskRun.findFirst({
          where: { agentId: scout.id, id: { not: ok.id }, completedAt: { not: null } },
        }),
      15_000,
    );
    expect(refused.stopReason).toBe("llm_auth");
    // The provider did get the key, over the wire, where it belongs.
    expect(p.requests.length).toBeGreaterThanOrEqual(5);
    for (const r of p.requests) expect(r.headers.authorization).toBe(`Bearer ${key}`);

    // Every page that could show it, in both formats.
    const pages = [
      KEYS_PAGE,
      `${KEYS_PAGE}/actions/add_api_key`,
      "/u/alice/settings",
      "/subagents",
      "/subagents/scout",
      "/subagents/scout/settings",
      "/subagents/scout/runs",
      `/subagents/scout/runs/${ok.id}`,
      `/subagents/scout/runs/${refused.id}`,
      "/subagents/scout/usage",
      "/usage",
      "/usage/pricing",
      "/notifications",
      "/whoami",
    ];
    for (const url of pages) {
      await expectStatus(mdAs("GET", url), 200);
      await expectStatus(get(url), 200);
    }
    for (const url of ["/subagents/scout/usage.csv", "/usage.csv"]) await expectStatus(get(url), 200);
    await expectStatus(mdAs("GET", "/whoami", undefined, scout), 200);

    // Let the outbox drain, so every event's job is in Redis before it is read.
    await waitFor(
      async () => (await db().event.count({ where: { tenantId: w.tenant.id, publishedAt: null } })) === 0,
      10_000,
    );

    const clean = (where: string, texts: string[]) => {
      for (const t of texts)
        for (const f of forms) expect(t.includes(f), `${where}: ${t.slice(0, 300)}`).toBe(false);
    };

    // 1. HTTP: every body and header received.
    const responses = seen.map((r) => `${JSON.stringify(r.headers)}\n${r.body}`);
    expect(responses.some((r) => r.includes(`…${last4(key)}`))).toBe(true);
    clean("HTTP response", responses);

    // 2. The app's log (it did log these requests) and the worker's log callback.
    expect(appLog.some((l) => l.includes(`"url":"${add}"`))).toBe(true);
    clean("app log", appLog);
    clean("worker log", workerLog.raw);

    // 3. Redis: everything under the test's queue prefix (job data holds run and event ids).
    const redis = await redisDump(env.config.REDIS_URL, env.config.QUEUE_PREFIX);
    expect(redis.some((e) => e.includes(ok.id))).toBe(true);
    clean("Redis", redis);

    // 4. What the models were sent: the prompts, and every header but Authorization.
    const sent = [...p.requests, ...env.llm.requests].map((r) => {
      const { authorization: _, ...headers } = r.headers;
      return `${JSON.stringify(headers)}\n${JSON.stringify(r.body)}`;
    });
    // (the agent's look at its owner's keys page was a 404, and the model saw that page)
    expect(sent.some((s) => s.includes("No user @alice"))).toBe(true);
    clean("LLM request", sent);
    expect(sent.some((s) => s.includes("For now use [masked: OpenAI key]"))).toBe(true);
    for (const s of sent) expect(s.includes(pasted), "LLM request holds the pasted key").toBe(false);

    // 5. The mail that told alice of the refused run (its error quoted the key).
    const mails = await waitFor(
      async () => (inbox.to(w.alice.email).length ? inbox.to(w.alice.email) : null),
      15_000,
    );
    expect(mails[0]!.subject).toBe("@scout could not finish: the model's provider refused its key");
    clean(
      "mail",
      mails.map((m) => m.raw),
    );

    // 6. Every row of every table. The sealed key is bytes; it must not hold the plaintext either.
    const rows = await databaseDump();
    expect(rows.some((r) => r.table === "agent_api_keys" && r.row.includes(k.id))).toBe(true);
    expect(rows.some((r) => r.table === "subagent_task_run_steps" && r.row.includes(ok.id))).toBe(true);
    clean(
      "database",
      rows.map((r) => `${r.table}: ${r.row}`),
    );
    const holding = rows.filter((r) => r.row.includes(pasted)).map((r) => r.table);
    expect(holding).toEqual(["notes"]);
    for (const row of await db().agentApiKey.findMany({ where: { tenantId: w.tenant.id } })) {
      expect(Buffer.from(row.encryptedKey).includes(Buffer.from(key))).toBe(false);
      expect(openKey(row)).toBe(key);
    }
  }, 60_000);
});
