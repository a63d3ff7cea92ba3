// A webhook's signature scheme (Cadre's or GitHub's), the 401s that tell a sender what is
// wrong, rotation's grace period, and "Send a test delivery". Real Postgres; no worker runs
// here, so the runs deliveries queue stay queued where the assertions read them.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeAgent, runsOf } from "./helpers/agents.ts";
import { buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import { createHook, type Hook, secretIn, send } from "./helpers/webhooks.ts";

const db = testPrisma;
let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app.close();
});

const PAGE = "/subagents/scout/webhooks";
const error = (res: { body: string }) => (JSON.parse(res.body) as { error: string }).error;

async function setup(
  signature: "cadre" | "github" = "cadre",
): Promise<{ w: World; agentId: string; hook: Hook }> {
  const w = await makeWorld("ws");
  const scout = await makeAgent(w, w.alice, "scout");
  const hook = await createHook(app, w, w.alice, "scout", { name: "GitHub issues", signature });
  return { w, agentId: scout.id, hook };
}

const act = (w: World, action: string, body: Record<string, unknown>) =>
  md(app, w, w.alice, "POST", `${PAGE}/actions/${action}`, body);

describe("GitHub's signature", () => {
  it("X-Hub-Signature-256 is accepted, X-GitHub-Delivery names the delivery, ping starts nothing", async () => {
    const { w, agentId, hook } = await setup("github");
    // Shown with the secret, once: where it goes in GitHub, and a delivery signed GitHub's way.
    expect(hook.res.body).toContain("**Settings → Webhooks → Add webhook**");
    expect(hook.res.body).toContain(`-H "X-Hub-Signature-256: sha256=$SIG"`);
    const guid = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
    const body = JSON.stringify({ action: "opened", issue: { title: "Crash on save" } });
    const first = await send(app, w, hook.id, body, { secret: hook.secret, github: true, delivery: guid });
    expect(first.statusCode, first.body).toBe(202);
    const again = await send(app, w, hook.id, body, { secret: hook.secret, github: true, delivery: guid });
    expect(JSON.parse(again.body).run).toBe(JSON.parse(first.body).run);
    const [run] = await runsOf(agentId);
    expect(run!.triggerEventId).toBe(`webhook:${hook.id}:${guid}`);
    const ping = await send(app, w, hook.id, '{"zen":"Keep it logically awesome."}', {
      secret: hook.secret,
      github: true,
      delivery: "ping-1",
      headers: { "x-github-event": "ping" },
    });
    expect([ping.statusCode, JSON.parse(ping.body)]).toEqual([200, { ok: true, ping: "pong" }]);
    expect(await runsOf(agentId)).toHaveLength(1);
    const page = (await md(app, w, w.alice, "GET", PAGE)).body;
    expect(page).toContain("signed GitHub's way (`X-Hub-Signature-256`)");
  });

  it("set_webhook_signature switches a webhook between schemes", async () => {
    const { w, agentId, hook } = await setup("cadre");
    const gh = await send(app, w, hook.id, "{}", { secret: hook.secret, github: true, delivery: "a" });
    expect(gh.statusCode).toBe(401);
    const res = await act(w, "set_webhook_signature", { webhook_id: hook.id, signature: "github" });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("now expects GitHub's signature (X-Hub-Signature-256)");
    expect(
      (await send(app, w, hook.id, "{}", { secret: hook.secret, github: true, delivery: "b" })).statusCode,
    ).toBe(202);
    expect((await send(app, w, hook.id, "{}", { secret: hook.secret, delivery: "c" })).statusCode).toBe(401);
    expect(await runsOf(agentId)).toHaveLength(1);
    const bad = await act(w, "set_webhook_signature", { webhook_id: hook.id, signature: "gitlab" });
    expect(bad.statusCode).toBe(400);
  });
});

describe("what a refused sender is told", () => {
  // Regression (issue 30): a missing signature and a wrong one got the same message.
  it("no signature, another scheme's, a wrong one: three distinct 401s naming the expected header", async () => {
    const { w, hook } = await setup("cadre");
    const none = await send(app, w, hook.id, "{}", { signature: null });
    expect(none.statusCode).toBe(401);
    expect(error(none)).toMatch(
      /^No signature\. This webhook expects Cadre's signature: X-Cadre-Signature: t=/,
    );
    const github = await send(app, w, hook.id, "{}", { secret: hook.secret, github: true });
    expect(error(github)).toMatch(
      /^Signed GitHub's way \(X-Hub-Signature-256\), but this webhook expects Cadre's/,
    );
    expect(error(github)).toContain("switch it to GitHub's on the webhook's page");
    const wrong = await send(app, w, hook.id, "{}", { secret: "whsec_wrong" });
    expect(error(wrong)).toMatch(/^The signature does not match \(X-Cadre-Signature: /);
    const gh = await setup("github");
    const ghNone = await send(app, gh.w, gh.hook.id, "{}", { signature: null, github: true });
    expect(error(ghNone)).toMatch(
      /^No signature\. This webhook expects GitHub's signature: X-Hub-Signature-256: sha256=/,
    );
    const ghWrong = await send(app, gh.w, gh.hook.id, "{}", { secret: "whsec_wrong", github: true });
    expect(error(ghWrong)).toMatch(/^The signature does not match \(X-Hub-Signature-256: /);
  });
});

describe("rotation's grace period", () => {
  it("the old secret keeps working for 24 hours beside the new one, then is refused; a second rotation ends the first's grace", async () => {
    const { w, agentId, hook } = await setup();
    const rotated = await act(w, "rotate_webhook_secret", { webhook_id: hook.id });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.body).toContain("the old one is accepted until");
    const fresh = secretIn(rotated);
    const row = await db().agentWebhook.findUniqueOrThrow({ where: { id: hook.id } });
    const hours = (row.previousSecretUntil!.getTime() - row.rotatedAt!.getTime()) / 3600_000;
    expect(hours).toBe(24);
    expect((await send(app, w, hook.id, "{}", { secret: hook.secret, delivery: "old" })).statusCode).toBe(
      202,
    );
    expect((await send(app, w, hook.id, "{}", { secret: fresh, delivery: "new" })).statusCode).toBe(202);
    expect((await md(app, w, w.alice, "GET", PAGE)).body).toContain("the old secret is accepted until");
    // The grace over: refused.
    await db().agentWebhook.update({
      where: { id: hook.id },
      data: { previousSecretUntil: new Date(Date.now() - 1) },
    });
    expect((await send(app, w, hook.id, "{}", { secret: hook.secret, delivery: "late" })).statusCode).toBe(
      401,
    );
    expect((await md(app, w, w.alice, "GET", PAGE)).body).not.toContain("the old secret is accepted until");
    // Rotated twice: only the secret just replaced is still accepted.
    const third = secretIn(await act(w, "rotate_webhook_secret", { webhook_id: hook.id }));
    expect((await send(app, w, hook.id, "{}", { secret: fresh, delivery: "second" })).statusCode).toBe(202);
    expect((await send(app, w, hook.id, "{}", { secret: hook.secret, delivery: "first" })).statusCode).toBe(
      401,
    );
    expect((await send(app, w, hook.id, "{}", { secret: third, delivery: "third" })).statusCode).toBe(202);
    expect(await runsOf(agentId)).toHaveLength(4);
  });

  it("a browser's rotation asks first, naming the grace, then shows the new secret once", async () => {
    const { w, hook } = await setup();
    const b = await login(app, w, w.alice);
    const form = { _action: "rotate_webhook_secret", webhook_id: hook.id, old_secret: "grace" };
    const ask = await b.post(PAGE, form);
    expect(ask.statusCode).toBe(200);
    expect(ask.body).toContain('<section class="confirm"');
    expect(ask.body).toContain("the old one keeps working for 24 hours");
    const row = await db().agentWebhook.findUniqueOrThrow({ where: { id: hook.id } });
    expect(row.rotatedAt).toBeNull();
    const done = await b.post(PAGE, { ...form, _confirm: "yes" });
    expect(done.statusCode).toBe(303);
    const shown = await b.get(done.headers.location!);
    expect(shown.body).toContain("Its new signing secret");
    const fresh = /<code class="token copyable">(whsec_[\w-]+)<\/code>/.exec(shown.body)?.[1];
    expect((await send(app, w, hook.id, "{}", { secret: fresh, delivery: "n" })).statusCode).toBe(202);
  });
});

describe("Send a test delivery", () => {
  it("signs a body the webhook's way and starts a run through the same checks, for each scheme", async () => {
    for (const scheme of ["cadre", "github"] as const) {
      const { w, agentId, hook } = await setup(scheme);
      const res = await act(w, "send_test_delivery", { webhook_id: hook.id });
      expect(res.statusCode, res.body).toBe(201);
      const [run] = await runsOf(agentId);
      expect(res.headers.location).toBe(`/subagents/scout/runs/${run!.id}`);
      expect(res.body).toContain(`signed ${scheme === "github" ? "GitHub's" : "Cadre's"} way, accepted`);
      expect(run!.triggerKind).toBe("webhook");
      expect(run!.triggerRef).toBe(hook.id);
      expect(run!.task).toContain('"test":true');
      expect(run!.task).toContain('"sent_by":"@alice"');
      // Each test is a delivery of its own, not a redelivery of the last.
      expect((await act(w, "send_test_delivery", { webhook_id: hook.id })).statusCode).toBe(201);
      expect(await runsOf(agentId)).toHaveLength(2);
    }
  });

  it("from the browser: a button beside the webhook, then the run it started; refused while disabled", async () => {
    const { w, agentId, hook } = await setup();
    const b = await login(app, w, w.alice);
    const page = (await b.get(PAGE)).body;
    expect(page).toMatch(/data-action="send_test_delivery"[\s\S]*?>Send a test delivery<\/button>/);
    const res = await b.post(PAGE, { _action: "send_test_delivery", webhook_id: hook.id });
    expect(res.statusCode).toBe(303);
    const [run] = await runsOf(agentId);
    expect(res.headers.location).toBe(`/subagents/scout/runs/${run!.id}`);
    expect((await b.get(res.headers.location!)).body).toContain("Test delivery to “GitHub issues”");
    await act(w, "disable_webhook", { webhook_id: hook.id });
    expect((await b.get(PAGE)).body).not.toContain('data-action="send_test_delivery"');
    const off = await act(w, "send_test_delivery", { webhook_id: hook.id });
    expect(off.statusCode).toBe(409);
    expect(off.body).toContain("takes no deliveries now");
    expect(await runsOf(agentId)).toHaveLength(1);
  });
});
