// The leak test for invitation and invite-link tokens: an invitation's token leaves the server
// once, in its mail; the shared invite link's once, in the answer that made it. Neither is in
// any later HTTP answer (the pages post back to their own address), a log line of the app or
// the worker (URLs are logged with the token cut out), a job in Redis, or a row but the outbox's
// copy of the invitation's own mail; the links' rows hold hashes.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256 } from "../src/lib/ids.ts";
import { linkIn, mailTo } from "./helpers/account-mail.ts";
import type { AgentEnv } from "./helpers/agents.ts";
import { csrfOf, makeWorld, md, testPrisma } from "./helpers/app.ts";
import { databaseDump, redisDump } from "./helpers/dumps.ts";
import type { Inbox } from "./helpers/inbox.ts";
import { answers, expectClean, formsOf, type LeakStack, startLeakStack } from "./helpers/leak-stack.ts";
import type { CapturedLog } from "./helpers/logs.ts";
import { signInAs } from "./helpers/sessions.ts";

let stack: LeakStack;
let app: FastifyInstance;
let env: AgentEnv;
let inbox: Inbox;
let appLog: string[];
let workerLog: CapturedLog;
beforeAll(async () => {
  stack = await startLeakStack("invite-leak");
  ({ app, env, inbox, appLog, workerLog } = stack);
});
afterAll(() => stack?.close());

describe("the leak test for invitation tokens", () => {
  it("puts an invitation's token in its mail, the invite link's in the answer that made it, and nowhere else", async () => {
    const w = await makeWorld("invleak");
    await testPrisma().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
    const seen: LightMyRequestResponse[] = [];
    const alice = await signInAs(app, w, w.alice);
    const keep = (res: LightMyRequestResponse) => {
      seen.push(res);
      return res;
    };
    const visitor: Record<string, string> = {};
    const send = async (
      method: "GET" | "POST",
      url: string,
      form?: Record<string, string>,
      markdown = false,
    ) => {
      const res = await app.inject({
        method,
        url,
        headers: {
          host: w.host,
          ...(markdown && { accept: "text/markdown" }),
          ...(form && { "content-type": "application/x-www-form-urlencoded" }),
        },
        cookies: visitor,
        ...(form && { payload: new URLSearchParams(form).toString() }),
      });
      for (const cookie of res.cookies) visitor[cookie.name] = cookie.value;
      return keep(res);
    };

    const dan = `dan@${w.tenant.subdomain}.test`;
    keep(
      await alice.post("/settings/invitations", { _action: "invite_people", emails: dan, role: "member" }),
    );
    const link = linkIn(await mailTo(inbox, dan, /invited you to/), "Accept the invitation");
    const inviteToken = link.split("/").pop()!;
    // Made and shown once, to the admin who turned it on: that one answer is not `seen`.
    const made = await md(app, w, w.alice, "POST", "/settings/invitations/actions/set_invite_link", {
      link: "on",
    });
    expect(made.statusCode).toBe(201);
    const joinLink = new URL(/invite link: `([^`]+)`/.exec(made.body)![1]!).pathname;
    const joinToken = joinLink.split("/").pop()!;
    keep(await alice.get("/settings/invitations"));
    keep(await alice.get("/settings/invitations.md"));
    keep(await md(app, w, w.alice, "GET", "/settings/invitations"));

    const form = await send("GET", link);
    expect(form.statusCode).toBe(200);
    await send("GET", link, undefined, true);
    expect(
      (await send("POST", link, { name: "Dan", password: "short", _csrf: csrfOf(form)! })).statusCode,
    ).toBe(400);
    const accepted = await send("POST", link, {
      name: "Dan",
      password: "amber walrus juggles quietly",
      _csrf: csrfOf(form)!,
    });
    expect(accepted.statusCode).toBe(303);
    expect((await send("GET", link)).statusCode).toBe(410);

    const joinForm = await send("GET", joinLink);
    expect(joinForm.statusCode).toBe(200);
    await send("GET", joinLink, undefined, true);
    const erin = `erin@${w.tenant.subdomain}.test`;
    expect((await send("POST", joinLink, { email: erin, _csrf: csrfOf(joinForm)! })).statusCode).toBe(200);
    const confirm = linkIn(await mailTo(inbox, erin, /Confirm your address/), "Accept the invitation");
    const confirmToken = confirm.split("/").pop()!;
    await mailTo(inbox, dan, /You joined a Cadre workspace/);
    await mailTo(inbox, w.alice.email, /accepted your invitation/);

    const tokens = [inviteToken, joinToken, confirmToken];
    const forms = tokens.flatMap(formsOf);
    const clean = (where: string, texts: string[]) => expectClean(where, texts, tokens);
    clean("HTTP response", answers(seen));
    expect(appLog.some((line) => line.includes('"url":"/invite/[token]"'))).toBe(true);
    expect(appLog.some((line) => line.includes('"url":"/join/[token]"'))).toBe(true);
    clean("app log", appLog);
    clean("worker log", workerLog.raw);
    clean("Redis", await redisDump(env.config.REDIS_URL, env.config.QUEUE_PREFIX));
    const rows = await databaseDump();
    for (const token of tokens)
      expect(rows.some((row) => row.table === "one_time_links" && row.row.includes(sha256(token)))).toBe(
        true,
      );
    // Only the outbox holds an invitation's own mail until the maintenance job prunes sent mail.
    const holding = [
      ...new Set(
        rows.filter((row) => forms.some((needle) => row.row.includes(needle))).map((row) => row.table),
      ),
    ];
    expect(holding).toEqual(["outbound_emails"]);
    expect(rows.some((row) => row.row.includes(joinToken))).toBe(false);
    const later = inbox.mails.filter((mail) => !/invited you to|Confirm your address/.test(mail.subject));
    clean(
      "later mail",
      later.map((mail) => mail.raw),
    );
  }, 90_000);
});
