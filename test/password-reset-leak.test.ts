// The leak test for password-reset tokens: a token leaves the server once, in its mail. It is
// in no HTTP answer (not even the reset page's form, which posts back to its own address), no
// log line of the app or the worker (the request's URL is logged with the token cut out), no
// job in Redis, and no row but the outbox's copy of its own mail; the link's row holds a hash.
import { randomBytes } from "node:crypto";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256 } from "../src/lib/ids.ts";
import { linkIn, mailTo } from "./helpers/account-mail.ts";
import type { AgentEnv } from "./helpers/agents.ts";
import { csrfOf, makeWorld } from "./helpers/app.ts";
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
  stack = await startLeakStack("reset-leak");
  ({ app, env, inbox, appLog, workerLog } = stack);
});
afterAll(() => stack?.close());

describe("the leak test for reset tokens", () => {
  it("puts a reset token in its mail and nowhere else", async () => {
    const w = await makeWorld("leak");
    const seen: LightMyRequestResponse[] = [];
    const cookies: Record<string, string> = {};
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
        cookies,
        ...(form && { payload: new URLSearchParams(form).toString() }),
      });
      for (const cookie of res.cookies) cookies[cookie.name] = cookie.value;
      seen.push(res);
      return res;
    };
    const page = await send("GET", "/forgot-password");
    expect(
      (await send("POST", "/forgot-password", { email: w.bob.email, _csrf: csrfOf(page)! })).statusCode,
    ).toBe(200);
    const link = linkIn(
      await mailTo(inbox, w.bob.email, /Choose a new Cadre password/),
      "Choose a new password",
    );
    const token = link.split("/").pop()!;
    const forms = [token].flatMap(formsOf);

    const form = await send("GET", link);
    expect(form.statusCode).toBe(200);
    await send("GET", link, undefined, true);
    expect((await send("POST", link, { password: "short", _csrf: csrfOf(form)! })).statusCode).toBe(400);
    const password = `quiet ${randomBytes(4).toString("hex")} harbour lanterns`;
    const reset = await send("POST", link, { password, _csrf: csrfOf(form)! });
    expect(reset.statusCode).toBe(303);
    expect((await send("GET", link)).statusCode).toBe(410);
    expect((await send("GET", `${link}.md`)).statusCode).toBeGreaterThanOrEqual(400);
    const bob = await signInAs(app, w, w.bob, { password });
    seen.push(await bob.get("/u/bob/settings/security"), await bob.get("/u/bob/settings/security.md"));
    await mailTo(inbox, w.bob.email, /Your Cadre password was reset/);

    const clean = (where: string, texts: string[]) => expectClean(where, texts, [token]);
    clean("HTTP response", answers(seen));
    // The app did log the link's requests, with the token cut out.
    expect(appLog.some((line) => line.includes('"url":"/reset-password/[token]"'))).toBe(true);
    clean("app log", appLog);
    clean("worker log", workerLog.raw);
    clean("Redis", await redisDump(env.config.REDIS_URL, env.config.QUEUE_PREFIX));
    const rows = await databaseDump();
    expect(rows.some((row) => row.table === "one_time_links" && row.row.includes(sha256(token)))).toBe(true);
    // Only the outbox holds its own mail's text until the maintenance job prunes sent mail.
    const holding = rows
      .filter((row) => forms.some((needle) => row.row.includes(needle)))
      .map((row) => row.table);
    expect(holding).toEqual(["outbound_emails"]);
    const mails = inbox.to(w.bob.email).filter((mail) => !/Choose a new/.test(mail.subject));
    clean(
      "later mail",
      mails.map((mail) => mail.raw),
    );
  }, 60_000);
});
