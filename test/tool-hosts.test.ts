// The workspace's list of hosts tools may be connected from (/settings/tools): only its admins
// change it; a host off the list is refused when a connection is made and when one made before
// is used; an empty list lets any public host; private addresses are refused whatever the list.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SETTING_CHANGED } from "../src/services/agents/core/settings.ts";
import { configureKeyring } from "../src/services/money/keyring.ts";
import { hostAllowed, parseHosts } from "../src/services/tools/hosts.ts";
import {
  actionNames,
  buildTestApp,
  makeWorld,
  md,
  testConfig,
  testPrisma,
  type World,
} from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";
import { startMcpServer, type TestMcpServer } from "./helpers/mcp-servers.ts";

const db = testPrisma();
let app: FastifyInstance;
let server: TestMcpServer;
let w: World;
const PAGE = "/u/alice/settings/tools";

beforeAll(async () => {
  app = await buildTestApp();
  server = await startMcpServer({ tools: [{ name: "ping", description: "Answers pong." }] });
  w = await makeWorld("th");
  await db.user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
});
afterAll(async () => {
  await server.close();
  await app.close();
});

const setHosts = (hosts: string, who = w.alice) =>
  md(app, w, who, "POST", "/settings/tools/actions/set_tool_hosts", { hosts });
const add = (slug: string, url = server.url) =>
  md(app, w, w.alice, "POST", `${PAGE}/actions/add_tool_connection`, {
    name: "Ping",
    slug,
    url,
    audience: "owner",
    auth: "none",
  });

describe("tool host allow-list", () => {
  it("matches exact hosts and *.domain, and names what is not a host", () => {
    const { hosts, bad } = parseHosts("mcp.linear.app, *.Example.com\nhttps://x.test/mcp  127.0.0.1");
    expect(hosts).toEqual(["mcp.linear.app", "*.example.com", "127.0.0.1"]);
    expect(bad).toEqual(["https://x.test/mcp"]);
    expect(hostAllowed(hosts, new URL("https://a.b.example.com/mcp"))).toBe(true);
    expect(hostAllowed(hosts, new URL("https://example.com/mcp"))).toBe(true);
    expect(hostAllowed(hosts, new URL("https://badexample.com/mcp"))).toBe(false);
    expect(hostAllowed([], new URL("https://anything.test/"))).toBe(true);
  });

  it("is the admins' to change; every member reads it", async () => {
    const asBob = await md(app, w, w.bob, "GET", "/settings/tools");
    expect(asBob.statusCode).toBe(200);
    expect(asBob.body).toContain("Any public host may be connected");
    expect(actionNames(asBob.body)).toEqual([]);
    expect((await setHosts("mcp.linear.app", w.bob)).statusCode).toBe(403);
    const bad = await setHosts("https://mcp.linear.app/mcp");
    expect(bad.statusCode).toBe(400);
    expect(issuesOf(bad.body).hosts).toContain("not host names");
  });

  it("refuses a host off the list at creation and at use", async () => {
    expect((await add("before")).statusCode).toBe(201);
    const before = await db.toolConnection.findFirstOrThrow({
      where: { tenantId: w.tenant.id, slug: "before" },
    });
    const saved = await setHosts("mcp.linear.app\n*.example.com");
    expect(saved.statusCode, saved.body).toBe(200);
    expect(saved.body).toContain("`mcp.linear.app`, `*.example.com`");

    const refused = await add("after");
    expect(refused.statusCode).toBe(400);
    expect(issuesOf(refused.body).url).toContain("is not on this workspace's list");
    const tested = await md(app, w, w.alice, "POST", `${PAGE}/${before.id}/actions/test_tool_connection`, {
      id: before.id,
    });
    expect(tested.body).toContain("is not on this workspace's list");
    expect((await db.toolConnection.findUniqueOrThrow({ where: { id: before.id } })).status).toBe(
      "unreachable",
    );
    const reached = server.requests.total;

    await setHosts("127.0.0.1");
    expect((await add("after")).statusCode).toBe(201);
    expect(server.requests.total).toBeGreaterThan(reached);
    const changes = await db.event.count({ where: { tenantId: w.tenant.id, type: SETTING_CHANGED } });
    expect(changes).toBe(2);
  });

  it("refuses private addresses whatever the list says, where the server does not allow them", async () => {
    await setHosts("");
    configureKeyring({ ...testConfig(), BYOK_ALLOW_PRIVATE_URLS: "0" });
    try {
      const refused = await add("private");
      expect(refused.statusCode).toBe(400);
      expect(issuesOf(refused.body).url).toContain("private");
      const localhost = await add("private", "http://tools.localhost:9/mcp");
      expect(issuesOf(localhost.body).url).toContain("private");
    } finally {
      configureKeyring(testConfig());
    }
  });
});
