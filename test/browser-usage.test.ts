// Money in a real browser: Chromium (playwright-core, headless) against the app on a real
// port. Alice's agent has a month of seeded usage; she reads its dashboard (SVG charts,
// tables) and her own, adds a provider key through the form (a password field, shown
// afterwards only as its last four characters), points the agent at it, and changes its
// monthly limit. Expected numbers come from the ledger itself, never from the page's code.
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedUsage } from "../src/dev/seed-usage.ts";
import { usd, usdShares } from "../src/services/money/pricing.ts";
import { makeAgent } from "./helpers/agents.ts";
import { buildTestApp, makeWorld, testPrisma } from "./helpers/app.ts";
import { contentText, launchChromium, listen, logIn, watchErrors } from "./helpers/browser.ts";

const TMP = fileURLToPath(new URL("../tmp/", import.meta.url));

let app: FastifyInstance | undefined;
let browser: Browser | undefined;
let baseOf: Awaited<ReturnType<typeof listen>>;

beforeAll(async () => {
  app = await buildTestApp();
  baseOf = await listen(app);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const db = testPrisma;
const KEY = "sk-browser-test-1234abcd";
const KEY_LABEL = "Browser test key";
const DAY_MS = 86_400_000;

/** A full-page screenshot under tmp/, its path printed so a person can look at it. */
async function shoot(page: Page, name: string) {
  mkdirSync(TMP, { recursive: true });
  const path = `${TMP}${name}`;
  await page.screenshot({ path, fullPage: true });
  console.log(`screenshot: ${path}`);
}

/** The table right after the `## title` heading: its header cells and body rows, as rendered text. */
async function tableAfter(page: Page, title: string) {
  const table = page
    .locator("article.content h2", { hasText: new RegExp(`^${title}$`) })
    .locator("xpath=following-sibling::*[1][self::div]/table");
  const head = (await table.locator("thead th").allTextContents()).map((t) => t.trim().toLowerCase());
  const rows: string[][] = [];
  for (const tr of await table.locator("tbody tr").all())
    rows.push((await tr.locator("td").allTextContents()).map((t) => t.trim()));
  return { table, head, rows };
}

/** Tables, charts and forms sticking out of the page's card (by more than a pixel). */
async function overflowing(page: Page): Promise<string[]> {
  return page.locator("article.content").evaluate((card) => {
    const right = card.getBoundingClientRect().right;
    return [...card.querySelectorAll("table, svg.chart, form")]
      .filter((el) => el.getBoundingClientRect().right > right + 1)
      .map(
        (el) =>
          `${el.tagName.toLowerCase()} ${Math.round(el.getBoundingClientRect().right - right)}px too wide`,
      );
  });
}

const money = (micros: number | bigint) => usd(micros);
const count = (v: number | bigint) => Number(v).toLocaleString("en-US");

/** What the ledger says about one agent: the 30 chart days (UTC, oldest first), by model, this month, top runs. */
async function ledger(agentId: string, now: Date) {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const from = new Date(today - 29 * DAY_MS);
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const rows = await db().llmUsage.findMany({
    where: { agentId, createdAt: { gte: from < monthStart ? from : monthStart } },
    select: {
      createdAt: true,
      model: true,
      runId: true,
      inputTokens: true,
      cachedTokens: true,
      outputTokens: true,
      costMicros: true,
    },
  });
  const days = Array.from({ length: 30 }, (_, i) => ({
    day: new Date(from.getTime() + i * DAY_MS).toISOString().slice(0, 10),
    calls: 0,
    fresh: 0,
    cached: 0,
    output: 0,
    cost: 0,
  }));
  const byModel = new Map<string, { calls: number; cost: number }>();
  const byRun = new Map<string, number>();
  let month = 0;
  for (const r of rows) {
    if (r.createdAt >= monthStart) month += Number(r.costMicros);
    if (r.createdAt < from) continue;
    const d = days[Math.floor((r.createdAt.getTime() - from.getTime()) / DAY_MS)]!;
    d.calls++;
    d.fresh += r.inputTokens - r.cachedTokens;
    d.cached += r.cachedTokens;
    d.output += r.outputTokens;
    d.cost += Number(r.costMicros);
    const m = byModel.get(r.model) ?? { calls: 0, cost: 0 };
    m.calls++;
    m.cost += Number(r.costMicros);
    byModel.set(r.model, m);
    if (r.runId) byRun.set(r.runId, (byRun.get(r.runId) ?? 0) + Number(r.costMicros));
  }
  const topRun = Math.max(...byRun.values());
  return { days, byModel, month, topRun, calls30: rows.filter((r) => r.createdAt >= from).length };
}

/** The charts on a dashboard (a laptop's: a phone has its own pair): exactly two, spend then tokens, one hover group (`<g>`) per day. */
async function checkCharts(page: Page, days: Awaited<ReturnType<typeof ledger>>["days"]) {
  const charts = page.locator("article.content svg.chart.wide");
  expect(await charts.count()).toBe(2);
  const [spend, tokens] = [charts.nth(0), charts.nth(1)];
  expect(await spend.getAttribute("aria-label")).toBe("Spend per day, last 30 days");
  expect(await tokens.getAttribute("aria-label")).toBe("Tokens per day, last 30 days");
  const active = days.filter((d) => d.calls > 0).length;
  expect(active).toBeGreaterThan(20);
  const bars = (chart: Locator, color: string) => chart.locator(`g > rect[fill="${color}"]`).count();
  expect(await spend.locator("g").count()).toBe(30);
  expect(await bars(spend, "#3b5bdb")).toBe(active);
  expect(await tokens.locator("g").count()).toBe(30);
  expect(await bars(tokens, "#748ffc")).toBe(days.filter((d) => d.fresh > 0).length);
  expect(await bars(tokens, "#bac8ff")).toBe(days.filter((d) => d.cached > 0).length);
  expect(await bars(tokens, "#f59f00")).toBe(days.filter((d) => d.output > 0).length);
  // The tokens chart has a legend; the spend chart (one series) needs none.
  const legend = await tokens.locator(":scope > text").allTextContents();
  for (const name of ["uncached input", "cached input", "output"]) expect(legend).toContain(name);

  // Bars are as tall as their day's spend (heights are rounded to 0.1px, at least 1px), and the busiest is well drawn.
  const heights = await spend
    .locator('g > rect[fill="#3b5bdb"]')
    .evaluateAll((rs) => rs.map((r) => Number(r.getAttribute("height"))));
  const costs = days.filter((d) => d.calls > 0).map((d) => d.cost);
  const scale = Math.max(...heights) / Math.max(...costs);
  for (const [i, h] of heights.entries())
    expect(Math.abs(h - Math.max(1, costs[i]! * scale))).toBeLessThan(0.5);
  expect(Math.max(...heights)).toBeGreaterThan(80);

  // Hovering the latest day with spend hits its group, whose tooltip says that day's spend
  // (within the chart's rounding). Not always today: just after midnight UTC today may have none.
  const at = days.findLastIndex((d) => d.calls > 0);
  const today = days[at]!;
  const label = new Date(`${today.day}T00:00:00Z`).toLocaleDateString("en-US", {
    month: "short",
    day: "numeric",
    timeZone: "UTC",
  });
  await spend.locator("g").nth(at).locator('rect[fill="transparent"]').hover();
  const hovered = spend.locator("g:hover");
  expect(await hovered.count()).toBe(1);
  const tip = (await hovered.locator("title").textContent()) ?? "";
  const m = new RegExp(`^${label}: \\$(\\d+\\.\\d+)$`).exec(tip);
  expect(m, tip).not.toBeNull();
  expect(Math.abs(Number(m![1]) - today.cost / 1e6)).toBeLessThan(0.01);
  const tokenTip = (await tokens.locator("g").nth(at).locator("title").textContent()) ?? "";
  expect(tokenTip).toMatch(
    new RegExp(
      `^${label}: [\\d.]+k? \\(uncached input [\\d.]+k?, cached input [\\d.]+k?, output [\\d.]+k?\\)$`,
    ),
  );
}

describe("usage, keys and limits in the browser", () => {
  let context: BrowserContext | undefined;
  afterAll(async () => {
    await context?.close();
  });

  it("alice reads her agent's dashboard, adds a key (never shown again), gives it to the agent and changes its limit", async () => {
    const w = await makeWorld("u");
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o", cost_limit_usd: 40 });
    await seedUsage(db(), {
      tenantId: w.tenant.id,
      agents: [{ id: scout.id, ownerId: w.alice.id }],
      rows: 3000,
      days: 30,
      seed: 0.42,
    });
    const now = new Date();
    const facts = await ledger(scout.id, now);
    const monthName = now.toLocaleDateString("en-US", { month: "long", year: "numeric", timeZone: "UTC" });

    context = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors = watchErrors(page);
    const base = baseOf(w);
    await logIn(page, base, w.alice);

    // 1. The agent's dashboard: the month against its limit, two charts, three tables.
    await page.goto(`${base}/subagents/scout`);
    await page.getByRole("link", { name: "Usage and cost" }).click();
    await page.waitForURL(`${base}/subagents/scout/usage`);
    await page.getByRole("heading", { name: "Usage: Agent scout", level: 1 }).waitFor();
    const pct = Math.round((facts.month / 40e6) * 100);
    const text = await contentText(page);
    expect(text).toContain(`${monthName} so far: ${money(facts.month)} of its $40.00 limit (${pct}%)`);
    expect(text).toMatch(/on pace for \$\d+\.\d\d by month end/);
    expect(text).toContain("Alerts at $1.00, $5.00, $10.00, $50.00");
    await checkCharts(page, facts.days);

    const models = await tableAfter(page, "By model");
    expect(models.head).toEqual(["model", "calls", "input", "cached", "output", "cost"]);
    const expectedModels = [...facts.byModel].sort((a, b) => b[1].cost - a[1].cost);
    // One precision for the table, the rows adding up (money-shares.test.ts).
    const shown = usdShares(expectedModels.map(([, s]) => s.cost)).parts;
    expect(models.rows.map((r) => [r[0], r[1], r[5]])).toEqual(
      expectedModels.map(([model, s], i) => [model, count(s.calls), shown[i]]),
    );
    const keys = await tableAfter(page, "By key");
    expect(keys.head[0]).toBe("key");
    expect(keys.rows.map((r) => [r[0], r[1]])).toEqual([["shared endpoint", count(facts.calls30)]]);
    const runs = await tableAfter(page, "Top runs by cost");
    expect(runs.head[0]).toBe("run");
    expect(runs.rows).toHaveLength(10);
    expect(runs.rows[0]!.at(-1)).toBe(money(facts.topRun));
    const runLinks = await runs.table
      .locator("tbody tr td:first-child a")
      .evaluateAll((as) => as.map((a) => a.getAttribute("href")));
    expect(runLinks).toHaveLength(10);
    for (const href of runLinks) expect(href).toMatch(/^\/subagents\/scout\/runs\/[a-z0-9]+$/);
    // The numbers behind the charts are one click away.
    const data = page.locator("details.chart-data");
    await data.locator("summary").click();
    expect(await data.locator("tbody tr").count()).toBe(31);
    await data.locator("summary").click();
    expect(await overflowing(page)).toEqual([]);
    await shoot(page, "browser-usage-agent.png");

    // 2. Her own dashboard, from the nav: her one agent, its spend against its limit, the same charts.
    await page.locator("header nav.nav").getByRole("link", { name: "Usage", exact: true }).click();
    await page.waitForURL(`${base}/usage`);
    await page.getByRole("heading", { name: "Your agents' usage", level: 1 }).waitFor();
    expect(await contentText(page)).toContain(`${monthName} so far: ${money(facts.month)}`);
    const agents = await tableAfter(page, "Agents this month");
    expect(agents.head).toEqual(["agent", "spent", "limit", "projected", "calls", "status"]);
    expect(agents.rows).toHaveLength(1);
    expect(agents.rows[0]!.slice(0, 3)).toEqual(["@scout", money(facts.month), "$40.00"]);
    expect(agents.rows[0]![5]).toBe("active");
    await checkCharts(page, facts.days);
    expect(await overflowing(page)).toEqual([]);
    await shoot(page, "browser-usage-overview.png");

    // 3. Her keys: add one through the form. The key is a password field, never echoed back.
    await page.goto(`${base}/u/alice/settings/api-keys`);
    await page.getByRole("heading", { name: "Model API keys", level: 1 }).waitFor();
    expect(await contentText(page)).toContain("No keys yet: add one with the form.");
    const form = () => page.locator("form#f-add_api_key-");
    const keyInput = () => form().locator('[name="key"]');
    expect(await keyInput().getAttribute("type")).toBe("password");
    expect(await keyInput().getAttribute("autocomplete")).toBe("off");
    await form().getByLabel("Label").fill(KEY_LABEL);
    await form().getByLabel("Provider").selectOption("openai_compatible");
    await keyInput().fill(KEY);
    // No base URL: the same page again, saying what is missing, with the key field empty.
    await form().getByRole("button").click();
    // The same address, and the message at the field, in its label's terms.
    await page.locator(".field-error").first().waitFor();
    expect(new URL(page.url()).pathname).toBe("/u/alice/settings/api-keys");
    const problem = form().locator(".field.has-error");
    expect(await problem.locator("label").textContent()).toContain("Base URL");
    expect(await problem.locator(".field-error").textContent()).toBe(
      "needed for an OpenAI-compatible provider",
    );
    expect(await form().getByLabel("Label").inputValue()).toBe(KEY_LABEL);
    expect(await form().getByLabel("Provider").inputValue()).toBe("openai_compatible");
    expect(await keyInput().getAttribute("type")).toBe("password");
    expect(await keyInput().inputValue()).toBe("");
    expect(await page.content()).not.toContain(KEY);
    expect(await db().agentApiKey.count({ where: { ownerId: w.alice.id } })).toBe(0);
    // With it: added, and from then on only its last four characters appear.
    await form().getByLabel("Base URL").fill("http://127.0.0.1:9/v1");
    await keyInput().fill(KEY);
    await form().getByRole("button").click();
    await page.waitForURL(`${base}/u/alice/settings/api-keys`);
    expect(await page.locator(".notice").textContent()).toBe(
      `Added “${KEY_LABEL}” (…abcd). Test it, then pick it on an agent's page.`,
    );
    const key = await db().agentApiKey.findFirstOrThrow({ where: { ownerId: w.alice.id } });
    expect(key).toMatchObject({
      label: KEY_LABEL,
      provider: "openai_compatible",
      baseUrl: "http://127.0.0.1:9/v1",
      keyHint: "abcd",
      revokedAt: null,
    });
    expect(Buffer.from(key.encryptedKey).includes(Buffer.from(KEY))).toBe(false);
    // Each key is its own section: a heading with the label and hint, then its facts.
    const card = async () => {
      const heading = page.locator("article.content h3", { hasText: KEY_LABEL });
      const facts = (await heading.locator("xpath=following-sibling::p[1]").textContent()) ?? "";
      return { heading: ((await heading.textContent()) ?? "").trim(), facts };
    };
    const added = await card();
    expect(added.heading).toBe(`${KEY_LABEL} · …abcd`);
    expect(added.facts).toContain(`OpenAI-compatible at http://127.0.0.1:9/v1 · id ${key.id}`);
    expect(added.facts).toContain("Status: not tested yet");
    expect(added.facts).toMatch(/used by —$/);
    expect(await keyInput().inputValue()).toBe("");
    expect(await page.content()).not.toContain(KEY);
    expect(await page.content()).not.toContain(KEY.slice(0, -4));
    await page.getByRole("button", { name: "Revoke" }).waitFor();
    // Testing it: nothing listens at that address, and the page says so, as a warning.
    await page.getByRole("button", { name: "Test", exact: true }).click();
    await page.waitForURL(`${base}/u/alice/settings/api-keys`);
    expect(await page.locator(".notice").textContent()).toBe(
      `✗ “${KEY_LABEL}” (…abcd): Could not reach http://127.0.0.1:9/v1.`,
    );
    expect(await page.locator(".notice").getAttribute("class")).toBe("notice warning");
    expect((await card()).facts).toMatch(/Status: ✗ test failed \(tested \d{4}-\d\d-\d\d \d\d:\d\d UTC\)/);
    expect(await page.content()).not.toContain(KEY);
    await shoot(page, "browser-usage-keys.png");
    // The markdown version of the page shows the hint only, too.
    const markdown = await page.evaluate(async () => {
      const res = await fetch("/u/alice/settings/api-keys.md");
      return { status: res.status, text: await res.text() };
    });
    expect(markdown.status).toBe(200);
    expect(markdown.text).toContain("`…abcd`");
    expect(markdown.text).not.toContain(KEY.slice(0, -4));

    // 4. The agent's page: pick the key; the configuration says who pays now, and the keys page agrees.
    await page.goto(`${base}/subagents/scout`);
    const config = () =>
      page.locator("article.content table tr", {
        has: page.locator("td", { hasText: /^model calls paid by$/ }),
      });
    expect(await config().locator("td").nth(1).textContent()).toBe("the workspace's shared endpoint");
    const pick = page.locator("form#f-set_agent_api_key-");
    const select = pick.locator('select[name="api_key"]');
    expect(await select.inputValue()).toBe("shared");
    expect(await select.locator("option").allTextContents()).toEqual([
      "Shared workspace endpoint",
      `${KEY_LABEL} (…abcd)`,
    ]);
    await select.selectOption({ label: `${KEY_LABEL} (…abcd)` });
    await pick.getByRole("button", { name: "Save" }).click();
    await page.waitForURL(`${base}/subagents/scout`);
    expect(await page.locator(".notice").textContent()).toBe(`@scout now uses “${KEY_LABEL}” (…abcd)`);
    expect(await config().locator("td").nth(1).textContent()).toBe(`your key “${KEY_LABEL}” (…abcd)`);
    expect(await page.locator("form#f-set_agent_api_key- select").inputValue()).toBe(key.id);
    const stored = await db().user.findUniqueOrThrow({ where: { id: scout.id } });
    expect(stored.agentConfig).toMatchObject({ api_key_id: key.id, model: "gpt-4o", cost_limit_usd: 40 });
    expect(await page.content()).not.toContain(KEY);
    await shoot(page, "browser-usage-agent-page.png");
    await page.goto(`${base}/u/alice/settings/api-keys`);
    expect((await card()).facts).toMatch(/used by @scout$/);

    // 5. Its monthly limit, changed through the dashboard's form.
    await page.goto(`${base}/subagents/scout/usage`);
    const limitForm = page.locator("form#f-set_cost_limit-");
    const limit = limitForm.locator('[name="monthly_limit_usd"]');
    expect(await limit.inputValue()).toBe("40");
    await limit.fill("75");
    await limitForm.getByRole("button", { name: "Save limit" }).click();
    await page.waitForURL(`${base}/subagents/scout/usage`);
    expect(await page.locator(".notice").textContent()).toBe(
      `Limit set to $75.00 a month (${money(facts.month)} spent so far).`,
    );
    expect(await contentText(page)).toContain(
      `${monthName} so far: ${money(facts.month)} of its $75.00 limit (${Math.round((facts.month / 75e6) * 100)}%)`,
    );
    expect(await page.locator('form#f-set_cost_limit- [name="monthly_limit_usd"]').inputValue()).toBe("75");
    const after = await db().user.findUniqueOrThrow({ where: { id: scout.id } });
    expect(after.agentConfig).toMatchObject({ cost_limit_usd: 75, api_key_id: key.id });
    await page.goto(`${base}/subagents/scout`);
    expect(await contentText(page)).toContain(
      `monthly cost limit $75.00 (${money(facts.month)} spent this month)`,
    );
    expect(errors).toEqual([]);
  }, 120_000);
});
