// A workspace comes to exist from the operator's CLI (a real child process on this file's
// database, mailing into the in-process SMTP inbox), its admin's set-up link works once, and
// DEFAULT_WORKSPACE serves it on a bare host: the MCP SDK client on http://127.0.0.1:<port>/mcp.
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.ts";
import { newId } from "../src/lib/ids.ts";
import { createApiToken } from "../src/services/tokens.ts";
import { buildTestApp, testConfig, testPrisma } from "./helpers/app.ts";
import { cadre } from "./helpers/cadre-cli.ts";
import { type Inbox, startInbox } from "./helpers/inbox.ts";

const setupPathIn = (text: string) => /\/setup\/[A-Za-z0-9_-]{20,}/.exec(text)?.[0];

let inbox: Inbox;
beforeAll(async () => {
  inbox = await startInbox();
});
afterAll(async () => {
  await inbox.close();
});

describe("bin/cadre workspace create", { timeout: 120_000 }, () => {
  it("creates the workspace and its admin, whose mailed set-up link works once and signs in", async () => {
    const handle = `acme${newId(6)}`;
    const created = await cadre(
      ["workspace", "create", "--handle", handle, "--name", "Acme", "--admin-email", `alice@${handle}.test`],
      { SMTP_URL: inbox.url },
    );
    expect(created.code, created.stderr).toBe(0);
    const printed = setupPathIn(created.stdout);
    expect(printed).toBeDefined();
    const [mail] = inbox.to(`alice@${handle}.test`);
    expect(mail?.subject).toContain("Set up your account in Acme");
    expect(setupPathIn(mail!.text)).toBe(printed);
    const tenant = await testPrisma().tenant.findUniqueOrThrow({ where: { subdomain: handle } });
    const link = await testPrisma().oneTimeLink.findFirstOrThrow({ where: { tenantId: tenant.id } });
    // Only the hash is kept: the raw token is nowhere in the row.
    expect(JSON.stringify(link)).not.toContain(printed!.split("/")[2]);

    const app = await buildTestApp();
    try {
      const host = `${handle}.localhost`;
      const form = await app.inject({ method: "GET", url: printed!, headers: { host } });
      expect(form.statusCode).toBe(200);
      expect(form.body).toContain("Set up and sign in");
      const csrfCookie = form.cookies.find((cookie) => cookie.name === "cadre_csrf")!;
      const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)![1]!;
      const post = (password: string) =>
        app.inject({
          method: "POST",
          url: printed!,
          headers: { host, cookie: `cadre_csrf=${csrfCookie.value}` },
          payload: { _csrf: csrf, name: "Alice Adams", password },
        });
      const weak = await post("password123");
      expect(weak.statusCode).toBe(400);
      expect(weak.body).toContain("Password: Too easy to guess");
      const done = await post("wobbly kettle seventh orbit");
      expect(done.statusCode).toBe(303);
      const session = done.cookies.find((cookie) => cookie.name === "cadre_session");
      expect(session?.value).toBeTruthy();
      const home = await app.inject({
        method: "GET",
        url: "/whoami.md",
        headers: { host, cookie: `cadre_session=${session!.value}` },
      });
      expect(home.statusCode).toBe(200);
      expect(home.body).toContain("Alice Adams");
      const again = await app.inject({ method: "GET", url: printed!, headers: { host } });
      expect(again.statusCode).toBe(410);
      expect(again.body).toContain("was already used");
      // Another workspace's host is refused for this token.
      const other = await cadre([
        "workspace",
        "create",
        "--handle",
        `other${newId(6)}`,
        "--name",
        "Other",
        "--admin-email",
        "x@other.test",
      ]);
      expect(other.code).toBe(0);
      const otherHost = `${/\(([a-z0-9]+)\)/.exec(other.stdout)![1]}.localhost`;
      const elsewhere = await app.inject({ method: "GET", url: printed!, headers: { host: otherHost } });
      expect(elsewhere.statusCode).toBe(410);
      expect(elsewhere.body).toContain("belongs to another workspace");
    } finally {
      await app.close();
    }
  });

  it("refuses a taken or malformed handle with a clear message and a non-zero exit", async () => {
    const handle = `taken${newId(6)}`;
    expect(
      (await cadre(["workspace", "create", "--handle", handle, "--name", "A", "--admin-email", "a@a.test"]))
        .code,
    ).toBe(0);
    const taken = await cadre([
      "workspace",
      "create",
      "--handle",
      handle,
      "--name",
      "B",
      "--admin-email",
      "b@b.test",
    ]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain(`The workspace handle “${handle}” is taken`);
    const malformed = await cadre([
      "workspace",
      "create",
      "--handle=Bad_Handle!",
      "--name",
      "B",
      "--admin-email",
      "b@b.test",
    ]);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain("is not a valid workspace handle");
    const listed = await cadre(["workspace", "list"]);
    expect(listed.stdout).toContain(handle);
  });
});

describe("DEFAULT_WORKSPACE", { timeout: 60_000 }, () => {
  it("serves the workspace on a bare host: an MCP SDK client at http://127.0.0.1:<port>/mcp", async () => {
    const handle = `solo${newId(6)}`;
    expect(
      (
        await cadre([
          "workspace",
          "create",
          "--handle",
          handle,
          "--name",
          "Solo",
          "--admin-email",
          "ann@solo.test",
        ])
      ).code,
    ).toBe(0);
    const tenant = await testPrisma().tenant.findUniqueOrThrow({ where: { subdomain: handle } });
    const admin = await testPrisma().user.findFirstOrThrow({ where: { tenantId: tenant.id } });
    const { token } = await createApiToken(testPrisma(), tenant.id, admin.id, "mcp", { scope: "manage" });
    const app = await buildTestApp({ DEFAULT_WORKSPACE: handle });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const port = (app.server.address() as AddressInfo).port;
    const client = new Client({ name: "accounts-test", version: "1.0.0" });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      const tools = await client.listTools();
      expect(tools.tools.length).toBeGreaterThan(0);
      // A subdomain still names its own workspace; an unknown one is still refused.
      const unknown = await app.inject({
        method: "GET",
        url: "/login",
        headers: { host: "nosuch.localhost" },
      });
      expect(unknown.statusCode).toBe(404);
    } finally {
      await client.close();
      await app.close();
    }
  });
});

describe("set-up tokens", { timeout: 120_000 }, () => {
  it("are in no log line of the web app, whatever the link's page answered", async () => {
    const handle = `logs${newId(6)}`;
    const created = await cadre([
      "workspace",
      "create",
      "--handle",
      handle,
      "--name",
      "Logs",
      "--admin-email",
      "l@logs.test",
    ]);
    const path = setupPathIn(created.stdout)!;
    const token = path.split("/")[2]!;
    const lines: string[] = [];
    const app = await buildApp({
      config: testConfig({ LOG_LEVEL: "info" }),
      prisma: testPrisma(),
      logger: { stream: { write: (line: string) => void lines.push(line) } },
    });
    await app.ready();
    try {
      const host = `${handle}.localhost`;
      await app.inject({ method: "GET", url: path, headers: { host } });
      await app.inject({
        method: "POST",
        url: path,
        headers: { host },
        payload: { name: "L", password: "x" },
      });
      await app.inject({ method: "GET", url: `${path}.md`, headers: { host } });
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.join("\n")).toContain("/setup/[token]");
      expect(lines.join("\n")).not.toContain(token);
    } finally {
      await app.close();
    }
  });
});
