// What a page answers for each Accept header: markdown, HTML, or (for a client that takes
// neither, `Accept: application/json`) a 406 naming both, before anything runs.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, makeWorld, testPrisma, type World } from "./helpers/app.ts";

let app: FastifyInstance;
let w: World;
beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("pf");
});
afterAll(async () => app.close());

const get = (url: string, accept?: string, token: string | null = w.alice.token) =>
  app.inject({
    method: "GET",
    url,
    headers: {
      host: w.host,
      ...(token && { authorization: `Bearer ${token}` }),
      ...(accept && { accept }),
    },
  });

describe("Accept", () => {
  // Regression (issue 30): a JSON client got JSON errors but a 200 with the HTML page.
  it("application/json alone: 406 in JSON, naming text/markdown and text/html, with Vary: Accept", async () => {
    const res = await get("/studios/general", "application/json");
    expect(res.statusCode).toBe(406);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.headers.vary).toContain("Accept");
    const { error } = res.json() as { error: { status: number; message: string } };
    expect(error.status).toBe(406);
    expect(error.message).toContain("text/markdown or text/html, not application/json");
    expect(error.message).toContain("Accept: text/markdown");
    // Another type nobody serves here: the same 406, as a page.
    const png = await get("/studios/general", "image/png");
    expect(png.statusCode).toBe(406);
    expect(png.body).toContain("Not acceptable");
  });

  it("a POST that only takes JSON is refused before it runs: nothing written", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/studios/general/actions/create_note",
      headers: { host: w.host, authorization: `Bearer ${w.alice.token}`, accept: "application/json" },
      payload: { text: "never" },
    });
    expect(res.statusCode).toBe(406);
    expect(await testPrisma().note.count({ where: { tenantId: w.tenant.id } })).toBe(0);
  });

  it("JSON first but markdown or HTML acceptable, a .md address, a wildcard, no Accept: the page", async () => {
    const md = await get("/studios/general", "application/json, text/markdown;q=0.5");
    expect(md.statusCode).toBe(200);
    expect(md.headers["content-type"]).toMatch(/^text\/markdown/);
    const suffix = await get("/studios/general.md", "application/json");
    expect(suffix.statusCode).toBe(200);
    expect(suffix.headers["content-type"]).toMatch(/^text\/markdown/);
    for (const accept of ["*/*", "application/json, */*;q=0.1", "text/*", undefined]) {
      const html = await get("/studios/general", accept);
      expect(html.statusCode, String(accept)).toBe(200);
      expect(html.headers["content-type"]).toMatch(/^text\/html/);
    }
  });

  it("JSON error bodies keep working: a bad token is a JSON 401, /mcp answers JSON-RPC", async () => {
    const denied = await get("/studios/general", "application/json", "cadre_wrong");
    expect(denied.statusCode).toBe(401);
    expect(denied.json().error.status).toBe(401);
    const mcp = await app.inject({
      method: "POST",
      url: "/mcp",
      headers: {
        host: w.host,
        authorization: `Bearer ${w.alice.token}`,
        accept: "application/json, text/event-stream",
      },
      payload: { jsonrpc: "2.0", id: 1, method: "tools/list" },
    });
    expect(mcp.statusCode).toBe(200);
    expect(mcp.json().result.tools.length).toBeGreaterThan(0);
  });
});
