// Sentences a person or an agent reads, read once more: no "in in", no asterisks shown as
// typed, a filter that is shown is bold and not a link.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerTask } from "../src/services/agents/triggers/dispatcher.ts";
import { makeAgent } from "./helpers/agents.ts";
import { buildTestApp, login, makeWorld, md } from "./helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(() => app.close());

const bob = { name: "Bob Brown", handle: "bob" };
const comment = {
  kind: "comment",
  id: "c1",
  title: "Plans",
  path: "/studios/general/notes/n1",
  text: "hi",
} as const;

describe("words", () => {
  it("a run's task says who did what, where, once", () => {
    expect(triggerTask("thread", bob, comment as never)).toMatch(
      /^Bob Brown \(@bob\) wrote a comment on “Plans”, in a thread you took part in, at \/studios\/general\/notes\/n1\./,
    );
    expect(triggerTask("mention", bob, comment as never)).toMatch(
      /^Bob Brown \(@bob\) mentioned you in a comment on “Plans” at \/studios/,
    );
    expect(triggerTask("reply", bob, comment as never)).toMatch(
      /^Bob Brown \(@bob\) replied to something you wrote, in a comment on “Plans” at /,
    );
    for (const kind of ["thread", "mention", "reply"] as const)
      expect(triggerTask(kind, bob, comment as never)).not.toMatch(/\bin in\b/);
  });

  it("an agent's runs page shows the chosen filter in bold, not as a link with its asterisks", async () => {
    const w = await makeWorld("words");
    await makeAgent(w, w.alice, "scout");
    const page = (await md(app, w, w.alice, "GET", "/subagents/scout/runs")).body;
    expect(page).toContain("Show: **All** · [queued](");
    expect(page).not.toContain("\\*\\*All\\*\\*");
    const filtered = (await md(app, w, w.alice, "GET", "/subagents/scout/runs?status=queued")).body;
    expect(filtered).toContain("Show: [All](/subagents/scout/runs) · **queued**");
    const html = (await (await login(app, w, w.alice)).get("/subagents/scout/runs")).body;
    expect(html).toContain("Show: <strong>All</strong>");
    expect(html).not.toContain("**All**");
  });
});
