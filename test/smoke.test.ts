import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { actionNames, buildTestApp, login, makeWorld, md, type World } from "./helpers/app.ts";

let app: FastifyInstance;
let w: World;
beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld();
});
afterAll(async () => app.close());

describe("smoke", () => {
  it("serves the studio page as markdown with its actions", async () => {
    const res = await md(app, w, w.alice, "GET", "/studios/general");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toContain("text/markdown");
    expect(res.headers.vary).toContain("Accept");
    expect(actionNames(res.body)).toEqual([
      "create_note",
      "create_decision",
      "create_commitment",
      "update_studio",
      "subscribe",
      "unsubscribe",
      "create_subagent",
    ]);
  });

  it("creates a note through a browser form and redirects to it", async () => {
    const b = await login(app, w, w.alice);
    const res = await b.post("/studios/general/actions/create_note", {
      text: "Hello from a form",
      title: "Form note",
    });
    expect(res.statusCode).toBe(303);
    const page = await b.get(res.headers.location as string);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("Hello from a form");
    expect(page.body).toContain("Note posted");
  });
});
