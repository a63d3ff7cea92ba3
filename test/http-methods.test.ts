// A wrong method on a real page is 405 with `Allow`, in the request's format; a path that
// names no page is still 404. Read from the registry's patterns alone, so a 405 says nothing
// of whether the thing the path names exists.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, makeWorld, type World } from "./helpers/app.ts";

let app: FastifyInstance;
let world: World;

beforeAll(async () => {
  app = await buildTestApp();
  world = await makeWorld("method");
});
afterAll(() => app.close());

const send = (method: "PUT" | "PATCH" | "DELETE", url: string, accept = "text/markdown") =>
  app.inject({
    method,
    url,
    headers: { host: world.host, accept, authorization: `Bearer ${world.alice.token}` },
  });

describe("a wrong method", () => {
  it.each(["PUT", "PATCH", "DELETE"] as const)("%s on a page: 405, Allow: GET, HEAD", async (method) => {
    const res = await send(method, "/studios/general");
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe("GET, HEAD");
    expect(res.headers["content-type"]).toMatch(/text\/markdown/);
    expect(res.body).toContain(`${method} is not allowed on /studios/general`);
    expect(res.body).toContain("POST /studios/general/actions/<name>");
  });

  it("on an action: 405, Allow includes POST, as HTML for a browser", async () => {
    const res = await send("DELETE", "/studios/general/actions/create_note", "text/html");
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe("GET, HEAD, POST");
    expect(res.headers["content-type"]).toMatch(/text\/html/);
    expect(res.body).toContain("GET describes it, POST runs it");
  });

  it("says the same of a studio that does not exist: the pattern answers, not the row", async () => {
    const res = await send("DELETE", "/studios/no-such-studio");
    expect(res.statusCode).toBe(405);
  });

  it("on a path that names no page: 404", async () => {
    const res = await send("DELETE", "/no/such/place/at/all");
    expect(res.statusCode).toBe(404);
    expect(res.headers.allow).toBeUndefined();
  });
});
