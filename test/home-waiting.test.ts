// The home page shows what waits for you, as a Linear or Slack user looks for first:
// approvals you can decide, questions your agents asked you, unread mentions, and the runs you
// started with how each stands (in words a waker who does not manage the agent may read), in
// markdown and HTML; and nothing of anyone else's.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { notifyForEvent } from "../src/services/notifications.ts";
import { makeAgent } from "./helpers/agents.ts";
import { act, buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app.close();
});

const db = testPrisma;
const SECRET = "the run's final words, for its owner only";

/** A run of `agentId` as the worker would have left it. */
async function run(w: World, agentId: string, data: Record<string, unknown>) {
  return db().subagentTaskRun.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      agentId,
      task: "t",
      maxSteps: 10,
      timeoutSeconds: 60,
      triggerKind: "manual",
      status: "completed",
      ...data,
    },
  });
}

async function waitingWorld() {
  const w = await makeWorld();
  const scout = await makeAgent(w, w.alice, "scout", { requires_approval: ["create_note"] });
  const note = await act(w, w.alice, "/studios/general", "create_note", { title: "Launch", text: "Plan" });
  const notePath = note.location as string;
  const noteId = notePath.split("/").pop()!;
  // An action of scout's waits for alice.
  const queued = await md(app, w, { ...w.alice, ...scout }, "POST", "/studios/general/actions/create_note", {
    title: "Draft",
    text: "Scout's draft",
  });
  expect(queued.body).toMatch(/Queued for approval as #(\w+)/);
  // A question scout asked alice, in a run of hers.
  await run(w, scout.id, {
    status: "waiting",
    stopReason: "asked_owner",
    question: "Which launch date?",
    initiatedById: w.alice.id,
  });
  // Bob mentions alice.
  await act(w, w.bob, notePath, "add_comment", { text: "@alice can you look at the date?" });
  const comment = await db().comment.findFirstOrThrow({ where: { authorId: w.bob.id } });
  const event = await db().event.findFirstOrThrow({
    where: { subjectId: comment.id, type: "comment.created" },
  });
  await notifyForEvent(db(), event.id);
  // Bob woke scout there; it finished with words only alice reads, without answering.
  await run(w, scout.id, {
    triggerKind: "mention",
    initiatedById: w.bob.id,
    threadId: noteId,
    finalMessage: SECRET,
  });
  return { w, scout, notePath };
}

describe("the home page", () => {
  it("shows alice her approvals, questions, mentions and runs, each linked", async () => {
    const { w, notePath } = await waitingWorld();
    const home = (await md(app, w, w.alice, "GET", "/")).body;
    expect(home).toContain("## Waiting for you");
    expect(home).toMatch(
      /### Approvals you can decide \(1\)\n\n- Post a note \(`create_note`\) by Agent scout \(@scout\) on \[the studio General\]\(\/studios\/general\) · asked .* · \[Review\]\(\/subagents\/scout\/pending\/\w+\)/,
    );
    expect(home).toMatch(
      /### Questions for you \(1\)\n\n- Agent scout \(@scout\) asks: “Which launch date\?” · \[Answer\]\(\/subagents\/scout\/runs\/\w+\)/,
    );
    expect(home).toContain("### Unread mentions (1)");
    expect(home).toContain(`Bob Brown ([@bob](/u/bob)) mentioned you in [the note “Launch”](${notePath})`);
    // Alice started the question's run from its form: hers to open.
    expect(home).toMatch(
      /### Runs you started \(1\)\n\n- @scout · \*\*waiting\*\*: waiting for its owner's answer · .* · \[See its run\]/,
    );
    // A browser's mention links through the opener that marks it read.
    const browser = await login(app, w, w.alice);
    const html = (await browser.get("/")).body;
    expect(html).toMatch(/href="\/notifications\/\w+\/open"/);
    expect(html).toContain("<h3>Approvals you can decide (1)</h3>");
  });

  it("shows bob the run he woke and how it ended, in words he may read, and nothing of alice's", async () => {
    const { w, notePath } = await waitingWorld();
    const home = (await md(app, w, w.bob, "GET", "/")).body;
    expect(home).toContain(
      `### Runs you started (1)\n\n- @scout in [the note “Launch” in General](${notePath}) · **completed**: it looked and had nothing to add`,
    );
    // He does not manage scout: no link to its run, never its final words.
    expect(home).not.toContain("See its run");
    expect(home).not.toContain(SECRET);
    expect(home).not.toMatch(/Approvals you can decide|Questions for you|Which launch date|Unread mentions/);
    // Carol: nothing waits, and the page says so.
    const carol = (await md(app, w, w.carol, "GET", "/")).body;
    expect(carol).toContain(
      "_Nothing waits for you: no approval, no question, no unread mention, no run you started._",
    );
  });
});
