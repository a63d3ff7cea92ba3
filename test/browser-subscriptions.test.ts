// Subscriptions in a real browser: Chromium (playwright-core, headless) against the app on a
// real port, real workers and the fake LLM. Alice has her agent watch a note from the note
// page; Bob comments on it in his own browser; Alice sees the run it started, and why.
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentEnv, makeAgent, startAgents, tool } from "./helpers/agents.ts";
import { act, buildTestApp, makeWorld, testPrisma, waitFor } from "./helpers/app.ts";
import { contentText, launchChromium, listen, logIn, watchErrors } from "./helpers/browser.ts";

const TMP = fileURLToPath(new URL("../tmp/", import.meta.url));

let app: FastifyInstance | undefined;
let env: AgentEnv | undefined;
let browser: Browser | undefined;
let baseOf: Awaited<ReturnType<typeof listen>>;

beforeAll(async () => {
  app = await buildTestApp();
  baseOf = await listen(app);
  env = await startAgents("browser-subs", {}, () => tool("finish", { message: "Read the new comment" }));
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await env?.close();
  await app?.close();
});

describe("subscriptions in the browser", () => {
  it("alice has scout watch a note; bob comments; alice sees the run it started", async () => {
    const w = await makeWorld("bs");
    const scout = await makeAgent(w, w.alice, "scout", { subscription_window_seconds: 0 });
    await makeAgent(w, w.alice, "helper");
    const { location: notePath } = await act(w, w.alice, "/studios/general", "create_note", {
      title: "Offsite plan",
      text: "Where should we go?",
    });
    const base = baseOf(w);
    mkdirSync(TMP, { recursive: true });

    const alice = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await alice.newPage();
    page.setDefaultTimeout(5000);
    const errors = watchErrors(page);
    await logIn(page, base, w.alice);
    await page.goto(`${base}${notePath}`);
    await page.locator("details.folded > summary", { hasText: "Have one of your agents watch this" }).click();
    const form = page.locator('form[data-action="subscribe"]');
    await form.locator('select[name="agent"]').selectOption("scout");
    await form.locator('input[type="checkbox"][name="commented"]').check();
    await form.getByRole("button", { name: "Have one of your agents watch this" }).click();
    await page.waitForURL(`${base}${notePath}`);
    await page.getByText("@scout watches this note for: commented").waitFor();
    expect(await contentText(page)).toContain("Watched by @scout (commented)");
    await page.screenshot({ path: `${TMP}browser-subscriptions-note.png`, fullPage: true });

    // Bob, in his own browser, comments on the note.
    const bob = await browser!.newContext({ viewport: { width: 390, height: 844 } });
    const bobPage = await bob.newPage();
    const bobErrors = watchErrors(bobPage);
    await logIn(bobPage, base, w.bob);
    await bobPage.goto(`${base}${notePath}`);
    await bobPage.locator('form[data-action="add_comment"] textarea[name="text"]').first().fill("Lisbon!");
    await bobPage.locator('form[data-action="add_comment"]').first().getByRole("button").click();
    await bobPage.getByText("Lisbon!").waitFor();
    await bob.close();

    // The run appears on scout's runs page, woken by the subscription.
    const run = await waitFor(
      () => testPrisma().subagentTaskRun.findFirst({ where: { agentId: scout.id, status: "completed" } }),
      15_000,
    );
    expect(run).toMatchObject({ triggerKind: "subscription" });
    await page.goto(`${base}/subagents/scout/runs`);
    const line = page.locator("article.content li", { hasText: `Run ${run.id}` });
    await line.getByRole("link", { name: "subscription" }).click();
    await page.waitForURL(`${base}/subagents/scout/subscriptions#${run.triggerRef}`);
    await page.locator(`h3[id="${run.triggerRef}"]`, { hasText: "note “Offsite plan”" }).waitFor();
    await page.goto(`${base}/subagents/scout/runs/${run.id}`);
    expect(await contentText(page)).toContain("@bob commented on “Offsite plan”");
    await page.screenshot({ path: `${TMP}browser-subscriptions-run.png`, fullPage: true });

    // The note page at phone width, for a look (tmp/).
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}${notePath}`);
    await page.screenshot({ path: `${TMP}browser-subscriptions-note-390.png`, fullPage: true });
    expect([...errors, ...bobErrors]).toEqual([]);
    await alice.close();
  });
});
