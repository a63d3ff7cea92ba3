// A workspace's own hostnames, through the real stack: an admin claims one on
// /settings/hostnames and a request whose Host is that name, over a real TCP connection to
// 127.0.0.1, is served as the workspace; removing it stops that at once. A hostname is one
// workspace's only ("taken", whoever holds it); malformed names, IP addresses and names under
// the base domain are refused naming the field, in HTML and in the markdown API.
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";

let app: FastifyInstance;
let port: number;
beforeAll(async () => {
  app = await buildTestApp();
  await app.listen({ host: "127.0.0.1", port: 0 });
  port = (app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await app?.close();
});
const db = () => testPrisma();
const PAGE = "/settings/hostnames";

async function adminWorld() {
  const w = await makeWorld("host");
  await db().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
  return w;
}

/** A GET over TCP to 127.0.0.1 naming `host`, as a Node client does (it cannot resolve the name). */
function getOnHost(host: string, path: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        headers: { host: `${host}:${port}`, accept: "text/markdown", authorization: `Bearer ${token}` },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

const fresh = () => `cadre-${newId(8)}.example.test`;
const add = (w: World, hostname: string) =>
  md(app, w, w.alice, "POST", `${PAGE}/actions/add_hostname`, { hostname });

describe("a workspace's own hostnames", () => {
  it("serve the workspace once claimed, and stop at once when removed", async () => {
    const w = await adminWorld();
    const hostname = fresh();
    const before = await getOnHost(hostname, "/whoami", w.alice.token);
    expect(before.status).toBe(404);
    // Written as a person might: capitals and a trailing dot; stored as looked up.
    const added = await add(w, `${hostname.toUpperCase()}.`);
    expect(added.statusCode).toBe(201);
    expect(added.body).toContain(`This workspace answers on ${hostname} now`);
    const served = await getOnHost(hostname, "/whoami", w.alice.token);
    expect(served.status).toBe(200);
    expect(served.body).toContain(`(\`${w.tenant.subdomain}\`)`);
    const page = await md(app, w, w.bob, "GET", PAGE);
    expect(page.body).toContain(`\`${hostname}\``);
    expect(page.body).toContain(`@alice added \`${hostname}\``);

    const removed = await md(app, w, w.alice, "POST", `${PAGE}/actions/remove_hostname`, { hostname });
    expect(removed.statusCode).toBe(200);
    const after = await getOnHost(hostname, "/whoami", w.alice.token);
    expect(after.status).toBe(404);
    expect((await md(app, w, w.bob, "GET", PAGE)).body).toContain(`@alice removed \`${hostname}\``);
  });

  it("belong to one workspace: another is told it is taken, and cannot remove it", async () => {
    const w = await adminWorld();
    const other = await adminWorld();
    const hostname = fresh();
    expect((await add(w, hostname)).statusCode).toBe(201);
    const taken = await add(other, hostname);
    expect(taken.statusCode).toBe(400);
    expect(issuesOf(taken.body).hostname).toBe(`${hostname} is taken`);
    const browser = await login(app, other, other.alice);
    const form = await browser.post(`${PAGE}/actions/add_hostname`, { hostname });
    expect(form.statusCode).toBe(400);
    expect(form.body).toContain(`${hostname} is taken`);
    const remove = await md(app, other, other.alice, "POST", `${PAGE}/actions/remove_hostname`, { hostname });
    expect(remove.statusCode).toBe(400);
    expect(issuesOf(remove.body).hostname).toBe(`${hostname} is not one of this workspace's hostnames`);
    // Its own again is as asked, and no second row either.
    const again = await add(w, hostname);
    expect(again.statusCode).toBe(200);
    expect(again.body).toContain(`${hostname} is already one of this workspace's hostnames.`);
    const rows = await db().workspaceHostname.findMany({ where: { hostname } });
    expect(rows).toMatchObject([{ tenantId: w.tenant.id }]);
    expect((await getOnHost(hostname, "/whoami", w.alice.token)).status).toBe(200);
  });

  it("refuse what is no hostname of the workspace's own, naming the field, in HTML and markdown", async () => {
    const w = await adminWorld();
    const refusals: [string, string][] = [
      ["", "enter a hostname"],
      ["https://cadre.example.test", "is not a bare hostname: leave out https://, any path and the port"],
      ["cadre.example.test:8443", "is not a bare hostname"],
      ["cadre", "is not a hostname: two or more labels"],
      ["bad_label.example.test", "is not a hostname"],
      ["-cadre.example.test", "is not a hostname"],
      ["10.0.0.7", "an IP address cannot be claimed"],
      [`${w.tenant.subdomain}.localhost`, "is under localhost, where workspaces are reached by their handle"],
      [`x.${w.tenant.subdomain}.localhost`, "is under localhost"],
    ];
    const browser = await login(app, w, w.alice);
    for (const [hostname, message] of refusals) {
      const api = await add(w, hostname);
      expect(api.statusCode, hostname).toBe(400);
      expect(issuesOf(api.body).hostname, hostname).toContain(message);
      const form = await browser.post(`${PAGE}/actions/add_hostname`, { hostname });
      expect(form.statusCode, hostname).toBe(400);
      // The form comes back with the message at its field, labelled.
      expect(issuesOf(form.body).hostname, hostname).toContain(message);
      expect(form.body).toContain("Hostname");
    }
    expect(await db().workspaceHostname.count({ where: { tenantId: w.tenant.id } })).toBe(0);
  });

  it("are changed by workspace admins only", async () => {
    const w = await adminWorld();
    const bob = await login(app, w, w.bob);
    const page = await bob.get(PAGE);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("Only workspace admins add or remove hostnames");
    expect(page.body).not.toContain('action="/settings/hostnames/actions/add_hostname"');
    const posted = await md(app, w, w.bob, "POST", `${PAGE}/actions/add_hostname`, { hostname: fresh() });
    expect(posted.statusCode).toBe(403);
    expect(posted.body).toContain("only workspace admins change the workspace's hostnames");
    expect(await db().workspaceHostname.count({ where: { tenantId: w.tenant.id } })).toBe(0);
  });
});
