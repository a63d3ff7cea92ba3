// The leak test for set-up and sign-up tokens, as test/password-reset-leak.test.ts is for
// reset tokens. A set-up token leaves the server in the operator's CLI output (the one place it
// is printed) and its mail; a sign-up token in its mail; the sign-in hand-over token in the one
// redirect that delivers it. None is in any other HTTP answer (the forms post back to their own
// address), a log line of the app or the worker, a job in Redis, or a row but the outbox's copy
// of its own mail; the links' rows hold hashes.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId, sha256 } from "../src/lib/ids.ts";
import { linkIn, mailTo } from "./helpers/account-mail.ts";
import type { AgentEnv } from "./helpers/agents.ts";
import { csrfOf } from "./helpers/app.ts";
import { cadre } from "./helpers/cadre-cli.ts";
import { databaseDump, redisDump } from "./helpers/dumps.ts";
import type { Inbox } from "./helpers/inbox.ts";
import { answers, expectClean, formsOf, type LeakStack, startLeakStack } from "./helpers/leak-stack.ts";
import type { CapturedLog } from "./helpers/logs.ts";

let stack: LeakStack;
let app: FastifyInstance;
let env: AgentEnv;
let inbox: Inbox;
let appLog: string[];
let workerLog: CapturedLog;
beforeAll(async () => {
  stack = await startLeakStack("links-leak", { SIGNUP: "open" });
  ({ app, env, inbox, appLog, workerLog } = stack);
});
afterAll(() => stack?.close());

/** A signed-out browser keeping its cookies per host; every answer is kept for the check. */
function browser(seen: LightMyRequestResponse[]) {
  const jars = new Map<string, Record<string, string>>();
  return async (
    method: "GET" | "POST",
    host: string,
    url: string,
    form?: Record<string, string>,
    markdown = false,
  ) => {
    const cookies = jars.get(host) ?? jars.set(host, {}).get(host)!;
    const res = await app.inject({
      method,
      url,
      headers: {
        host,
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
}

/** The tables that hold any form of these tokens. */
async function tablesHolding(tokens: string[]) {
  const rows = await databaseDump();
  for (const token of tokens)
    expect(rows.some((row) => row.table === "one_time_links" && row.row.includes(sha256(token)))).toBe(true);
  return [
    ...new Set(
      rows
        .filter((row) => tokens.flatMap(formsOf).some((needle) => row.row.includes(needle)))
        .map((row) => row.table),
    ),
  ];
}

describe("the leak test for set-up and sign-up tokens", () => {
  it("prints a set-up token once, from the CLI, mails it, and puts it nowhere else", async () => {
    const handle = `leak${newId(6)}`;
    const email = `alma@${handle}.test`;
    const cli = await cadre(
      ["workspace", "create", "--handle", handle, "--name", "Leak", "--admin-email", email],
      { SMTP_URL: inbox.url },
    );
    expect(cli.code, cli.stderr).toBe(0);
    const printed = /\/setup\/([A-Za-z0-9_-]{20,})/.exec(cli.stdout)?.[1];
    expect(printed).toBeDefined();
    const token = printed!;
    expect(cli.stdout.split(token)).toHaveLength(2);
    expectClean("CLI stderr", [cli.stderr], [token]);
    const link = linkIn(await mailTo(inbox, email, /Set up your account/), "Set up your account");
    expect(link).toBe(`/setup/${token}`);

    const seen: LightMyRequestResponse[] = [];
    const send = browser(seen);
    const host = `${handle}.localhost`;
    const form = await send("GET", host, link);
    expect(form.statusCode).toBe(200);
    await send("GET", host, link, undefined, true);
    expect(
      (await send("POST", host, link, { name: "Alma", password: "short", _csrf: csrfOf(form)! })).statusCode,
    ).toBe(400);
    const done = await send("POST", host, link, {
      name: "Alma",
      password: "copper meadow whistles late",
      _csrf: csrfOf(form)!,
    });
    expect(done.statusCode).toBe(303);
    expect((await send("GET", host, link)).statusCode).toBe(410);
    expect((await send("GET", "localhost", link)).statusCode).toBeGreaterThanOrEqual(400);

    expectClean("HTTP response", answers(seen), [token]);
    expect(appLog.some((line) => line.includes('"url":"/setup/[token]"'))).toBe(true);
    expectClean("app log", appLog, [token]);
    expectClean("worker log", workerLog.raw, [token]);
    expectClean("Redis", await redisDump(env.config.REDIS_URL, env.config.QUEUE_PREFIX), [token]);
    expect(await tablesHolding([token])).toEqual(["outbound_emails"]);
  }, 120_000);

  it("mails a sign-up token, redirects once with the hand-over's, and puts neither anywhere else", async () => {
    const email = `bo${newId(6)}@leak.test`;
    const seen: LightMyRequestResponse[] = [];
    const send = browser(seen);
    const page = await send("GET", "localhost", "/signup");
    expect((await send("POST", "localhost", "/signup", { email, _csrf: csrfOf(page)! })).statusCode).toBe(
      200,
    );
    const link = linkIn(await mailTo(inbox, email, /Create your Cadre workspace/), "Create your workspace");
    const token = link.split("/").pop()!;

    const form = await send("GET", "localhost", link);
    expect(form.statusCode).toBe(200);
    await send("GET", "localhost", link, undefined, true);
    const handle = `bo${newId(6)}`;
    const fields = { workspace_name: "Bo's", handle, name: "Bo", _csrf: csrfOf(form)! };
    expect((await send("POST", "localhost", link, { ...fields, password: "short" })).statusCode).toBe(400);
    const done = await send("POST", "localhost", link, {
      ...fields,
      password: "copper meadow whistles late",
    });
    expect(done.statusCode).toBe(303);
    // The redirect is where the hand-over's token is delivered, and its only place.
    const delivery = seen.pop()!;
    const handover = new URL(String(delivery.headers.location));
    const handoverToken = handover.pathname.split("/").pop()!;
    expect(delivery.body).not.toContain(handoverToken);
    const host = `${handle}.localhost`;
    expect((await send("GET", host, handover.pathname)).statusCode).toBe(303);
    expect((await send("GET", host, "/")).statusCode).toBeLessThan(400);
    expect((await send("GET", host, handover.pathname)).statusCode).toBe(410);
    expect((await send("GET", "localhost", link)).statusCode).toBe(410);
    expect((await send("GET", host, link)).statusCode).toBe(410);

    const tokens = [token, handoverToken];
    expectClean("HTTP response", answers(seen), tokens);
    expect(appLog.some((line) => line.includes('"url":"/signup/[token]"'))).toBe(true);
    expectClean("app log", appLog, tokens);
    expectClean("worker log", workerLog.raw, tokens);
    expectClean("Redis", await redisDump(env.config.REDIS_URL, env.config.QUEUE_PREFIX), tokens);
    expect(await tablesHolding([token])).toEqual(["outbound_emails"]);
    expect(await tablesHolding([handoverToken])).toEqual([]);
  }, 60_000);
});
