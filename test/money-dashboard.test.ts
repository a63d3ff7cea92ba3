// Usage dashboards and the CSV export, on real Postgres (price overrides are in
// money-prices.test.ts). The ledger rows are inserted by hand (exact tokens, costs, days, keys and runs) and every total is rebuilt
// from them with the seeder's rebuildTotals, so each expected number here is worked out from
// the rows themselves, never from the dashboard's own code.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rebuildTotals, seedUsage } from "../src/dev/seed-usage.ts";
import { newId } from "../src/lib/ids.ts";
import { projectMonth } from "../src/services/money/dashboard.ts";
import { createKey } from "../src/services/money/keys.ts";
import { PRICE_LIST_VERSION, usd, usdShares } from "../src/services/money/pricing.ts";
import { type Agent, makeAgent } from "./helpers/agents.ts";
import {
  actionNames,
  buildTestApp,
  login,
  makeWorld,
  md,
  type Person,
  testPrisma,
  type World,
} from "./helpers/app.ts";
import { pageBody, section, tableRows } from "./helpers/sections.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app?.close();
});

const db = testPrisma;
const DAY = 86_400_000;

// ---------------------------------------------------------------------------------------------
// Dates: the dashboards show today and the 29 UTC days before it; the month is the UTC month.

const today = () => {
  const d = new Date();
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
};
/** `days` UTC days ago, at 00:01 plus `minute` minutes. */
const dayAt = (days: number, minute = 0) => new Date(today() - days * DAY + (1 + minute) * 60_000);
/** The first moment the dashboards count (00:00 UTC, 29 days ago). */
const windowStart = () => new Date(today() - 29 * DAY);
const monthStart = () => {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
};
const dayKey = (d: Date) => d.toISOString().slice(0, 10);
/** How the charts name a day in a tooltip ("Nov 3"). */
const shortDay = (d: Date) =>
  d.toLocaleDateString("en-US", { month: "short", day: "numeric", timeZone: "UTC" });
const monthName = () =>
  new Date().toLocaleDateString("en-US", { month: "long", year: "numeric", timeZone: "UTC" });
const n = (v: number) => v.toLocaleString("en-US");

// ---------------------------------------------------------------------------------------------
// Ledger rows by hand

interface Spec {
  agent: Agent;
  at: Date;
  model: string;
  /** A key id, or null for the shared endpoint. */
  key: string | null;
  input: number;
  cached: number;
  output: number;
  cost: number;
  /** A run name (runs are created on first use, at their first row's time), or null. */
  run: string | null;
  priced?: boolean;
}

/** Inserts the rows (and their runs, as the worker leaves them), then rebuilds every total. */
async function insertLedger(w: World, specs: Spec[]): Promise<Record<string, string>> {
  const runs: Record<string, string> = {};
  for (const s of specs) {
    if (!s.run || runs[s.run]) continue;
    const run = await db().subagentTaskRun.create({
      data: {
        id: newId(),
        tenantId: w.tenant.id,
        agentId: s.agent.id,
        triggerKind: "manual",
        task: `Task ${s.run}`,
        maxSteps: 10,
        timeoutSeconds: 60,
        status: "completed",
        stepsCount: specs.filter((x) => x.run === s.run).length,
        createdAt: s.at,
      },
    });
    runs[s.run] = run.id;
  }
  const stepOf = (s: Spec, i: number) =>
    s.run ? specs.slice(0, i + 1).filter((x) => x.run === s.run).length : 1;
  await db().llmUsage.createMany({
    data: specs.map((s, i) => ({
      id: newId(),
      tenantId: w.tenant.id,
      agentId: s.agent.id,
      ownerId: s.agent.ownerId,
      runId: s.run ? runs[s.run]! : null,
      // Its place in its run (a runless call is step 1), and a latency that says which step it was.
      stepNumber: stepOf(s, i),
      apiKeyId: s.key,
      model: s.model,
      pricingVersion: PRICE_LIST_VERSION,
      priced: s.priced ?? true,
      inputTokens: s.input,
      cachedTokens: s.cached,
      outputTokens: s.output,
      costMicros: BigInt(s.cost),
      latencyMs: 250 * stepOf(s, i),
      createdAt: s.at,
    })),
  });
  await rebuildTotals(db(), w.tenant.id);
  return runs;
}

async function addKey(w: World, owner: Person, label: string, key: string) {
  // A closed local port: nothing here ever calls it.
  return createKey(db(), {
    tenantId: w.tenant.id,
    holder: { ownerId: owner.id },
    label,
    provider: "openai_compatible",
    baseUrl: "http://127.0.0.1:9/v1",
    key,
  });
}

/** Sums of rows, the way the tables show them. */
function sums(rows: Spec[]) {
  return rows.reduce(
    (a, r) => ({
      calls: a.calls + 1,
      input: a.input + r.input,
      cached: a.cached + r.cached,
      output: a.output + r.output,
      cost: a.cost + r.cost,
    }),
    { calls: 0, input: 0, cached: 0, output: 0, cost: 0 },
  );
}
const inWindow = (rows: Spec[]) => rows.filter((r) => r.at >= windowStart());
const thisMonth = (rows: Spec[]) => rows.filter((r) => r.at >= monthStart());

/** The 30 lines of the daily table the rows should produce, oldest first. */
/** The daily table's days and money: one precision for the table, days adding up to its total as shown (money-shares.test.ts). */
function dayShares(rows: Spec[]) {
  const days = Array.from({ length: 30 }, (_, i) => dayKey(new Date(windowStart().getTime() + i * DAY)));
  const perDay = days.map((day) => sums(rows.filter((r) => dayKey(r.at) === day)));
  return { days, perDay, cost: usdShares(perDay.map((s) => s.cost)) };
}

function dayLines(rows: Spec[]): string[] {
  const { days, perDay, cost } = dayShares(rows);
  return days.map((day, i) => {
    const s = perDay[i]!;
    return `| ${day} | ${n(s.calls)} | ${n(s.input)} | ${n(s.cached)} | ${n(s.output)} | ${cost.parts[i]} |`;
  });
}

/** The month's total as the header shows it: in the precision of the agents' rows under it. */
const monthTotal = (byAgent: Spec[][]) => usdShares(byAgent.map((rows) => sums(thisMonth(rows)).cost)).total;

// ---------------------------------------------------------------------------------------------
// Reading pages

/** Run ids of the top-runs table, in the page's order. */
const topRunIds = (page: string) =>
  [...section(page, "Top runs by cost").matchAll(/\/runs\/(\w+)\)/g)].map((m) => m[1]);

interface Chart {
  /** One per day: its tooltip and the fills of its visible bar segments. */
  bars: { tip: string; fills: string[] }[];
}
/** The `<svg class="chart wide">`s (or the phone's, `narrow`) of an HTML page, day by day. */
function charts(html: string, size: "wide" | "narrow" = "wide"): Chart[] {
  return [...html.matchAll(new RegExp(`<svg class="chart ${size}"[\\s\\S]*?</svg>`, "g"))].map(([svg]) => ({
    bars: [...svg.matchAll(/<g><title>([^<]*)<\/title>([\s\S]*?)<\/g>/g)].map(([, tip, body]) => ({
      tip: tip!,
      fills: [...body!.matchAll(/<rect [^>]*fill="([^"]+)"/g)]
        .map((m) => m[1]!)
        .filter((f) => f !== "transparent"),
    })),
  }));
}

const get = (w: World, who: Person, url: string) => md(app, w, who, "GET", url);
const body = (w: World, who: Person, url: string) => pageBody(app, w, who, url);

// ---------------------------------------------------------------------------------------------
// One workspace's spend: alice's agents alpha and beta, bob's gamma

const EVIL_LABEL = '=HYPERLINK("http://evil.example","open")';

async function spendWorld() {
  const w = await makeWorld();
  const alpha = await makeAgent(w, w.alice, "alpha");
  const beta = await makeAgent(w, w.alice, "beta");
  const gamma = await makeAgent(w, w.bob, "gamma");
  const work = await addKey(w, w.alice, "Work key", "sk-work-00001234");
  const evil = await addKey(w, w.alice, EVIL_LABEL, "sk-evil-00005678");
  const row = (
    agent: Agent,
    at: Date,
    model: string,
    key: string | null,
    tokens: number[],
    cost: number,
    run: string | null,
  ) => ({
    agent,
    at,
    model,
    key,
    input: tokens[0]!,
    cached: tokens[1]!,
    output: tokens[2]!,
    cost,
    run,
  });
  const rows = {
    alpha: [
      row(alpha, dayAt(0), "gpt-4o-mini", work.id, [1000, 200, 100], 500_000, "RA1"),
      row(alpha, dayAt(0, 1), "gpt-4o-mini", null, [2000, 0, 300], 750_000, "RA1"),
      // A model in no price list: recorded at $0 and flagged.
      { ...row(alpha, dayAt(1), "house_model", null, [500, 0, 50], 0, "RA2"), priced: false },
      row(alpha, dayAt(3), "claude-sonnet-4-5", work.id, [4000, 1000, 500], 2_000_000, "RA3"),
      // The oldest day on the dashboards, at its very start.
      { ...row(alpha, dayAt(29), "gpt-4o-mini", null, [100, 0, 10], 10_000, "RA4"), at: windowStart() },
      // Too old for any table, chart, top run or CSV: 31 days ago, and one minute before the window.
      row(alpha, dayAt(31), "gpt-4o-mini", null, [9000, 0, 900], 9_000_000, "RA5"),
      {
        ...row(alpha, dayAt(30), "gpt-4o-mini", null, [700, 0, 70], 7_000_000, null),
        at: new Date(windowStart().getTime() - 60_000),
      },
    ],
    beta: [
      row(beta, dayAt(1, 5), "gpt-4o", null, [3000, 0, 400], 1_500_000, "RB1"),
      row(beta, dayAt(10), "gpt-4o", evil.id, [600, 0, 60], 300_000, null),
      // Sub-cent spend, and a model id that a spreadsheet would take for a formula.
      row(beta, dayAt(5), "@cmd-model", null, [100, 0, 10], 400, null),
    ],
    gamma: [row(gamma, dayAt(0, 9), "gpt-4o", null, [8000, 0, 800], 4_000_000, "RG1")],
  };
  const runs = await insertLedger(w, [...rows.alpha, ...rows.beta, ...rows.gamma]);
  return { w, alpha, beta, gamma, work, evil, rows, runs };
}

describe("the dashboards add up the ledger", () => {
  let s: Awaited<ReturnType<typeof spendWorld>>;
  beforeAll(async () => {
    s = await spendWorld();
  });

  it("an agent's page (markdown): month, every day, by model, by key, top runs", async () => {
    const page = await body(s.w, s.w.alice, "/subagents/alpha/usage");
    const month = sums(thisMonth(s.rows.alpha));
    expect(page).toContain(`**${monthName()} so far: ${usd(month.cost)}** of its $100.00 limit`);
    expect(page).toContain(
      `${n(month.calls)} model calls and ${n(month.input + month.output)} tokens this month (${Math.round((100 * month.cached) / month.input)} % of input served from the provider's cache)`,
    );
    expect(month.cached).toBeGreaterThan(0);
    expect(page).toContain("[Download CSV](/subagents/alpha/usage.csv)");

    // Every day of the window, zeros included, on the right date; the two old rows nowhere.
    expect(tableRows(page, "Last 30 days")).toEqual([
      ...dayLines(s.rows.alpha),
      "| **30 days** | **5** | **7,600** | **1,200 (16 %)** | **960** | **$3.26** |",
    ]);
    expect(tableRows(page, "Last 30 days")[29]).toBe(
      `| ${dayKey(new Date())} | 2 | 3,000 | 200 | 400 | $1.25 |`,
    );

    // By cost, the unpriced model last, flagged, its id shown as written (no markdown escapes in code).
    expect(tableRows(page, "By model")).toEqual([
      "| `claude-sonnet-4-5` | 1 | 4,000 | 1,000 (25 %) | 500 | $2.00 |",
      "| `gpt-4o-mini` | 3 | 3,100 | 200 (6 %) | 410 | $1.26 |",
      "| ⚠ `house_model` (no price: counted as $0) | 1 | 500 | 0 | 50 | $0.00 |",
    ]);
    expect(section(page, "By model")).toContain("Some models have no price");
    expect(section(page, "By model")).toContain("[the price list](/usage/pricing)");
    expect(tableRows(page, "By key")).toEqual([
      "| Work key \\(…1234\\) | 2 | 5,000 | 1,200 (24 %) | 600 | $2.50 |",
      "| shared endpoint | 3 | 2,600 | 0 | 360 | $0.76 |",
    ]);
    // RA2 cost nothing and RA5 is too old: neither is a top run.
    expect(topRunIds(page)).toEqual([s.runs.RA3, s.runs.RA1, s.runs.RA4]);
    expect(section(page, "Top runs by cost")).toContain("Task RA3 | completed | 1 | 4,500 | $2.00 |");
    expect(actionNames(page)).toEqual(["set_cost_limit"]);
  });

  it("/usage (markdown): all of alice's agents and none of bob's", async () => {
    const page = await body(s.w, s.w.alice, "/usage");
    const mine = [...s.rows.alpha, ...s.rows.beta];
    const month = sums(thisMonth(mine));
    expect(page).toContain("# Your agents' usage");
    expect(month.cost).toBeGreaterThan(0);
    expect(page).toContain(`**${monthName()} so far: ${monthTotal([s.rows.alpha, s.rows.beta])}**`);
    // Both agents, the costlier this month first; the projected column (checked to the cent
    // in its own test) is left out, as it moves with the clock.
    const spent = usdShares([s.rows.alpha, s.rows.beta].map((rows) => sums(thisMonth(rows)).cost)).parts;
    const agentRow = (handle: string, rows: Spec[], shown: string) => {
      const m = sums(thisMonth(rows));
      return {
        cost: m.cost,
        line: `| [@${handle}](/subagents/${handle}/usage) | ${shown} | $100.00 | ${m.calls} | active |`,
      };
    };
    const expected = [
      agentRow("alpha", s.rows.alpha, spent[0]!),
      agentRow("beta", s.rows.beta, spent[1]!),
    ].sort((a, b) => b.cost - a.cost);
    const withoutProjection = (l: string) =>
      l
        .split(" | ")
        .filter((_, i) => i !== 3)
        .join(" | ");
    expect(tableRows(page, "Agents this month").map(withoutProjection)).toEqual(expected.map((e) => e.line));
    expect(page).not.toContain("gamma");

    expect(tableRows(page, "Last 30 days")).toEqual([
      ...dayLines(mine),
      expect.stringMatching(/^\| \*\*30 days\*\* \| \*\*8\*\* \|/),
    ]);
    // One precision for the table: the row under a cent puts every row in hundredths of a cent.
    expect(tableRows(page, "By model")).toEqual([
      "| `claude-sonnet-4-5` | 1 | 4,000 | 1,000 (25 %) | 500 | $2.0000 |",
      "| `gpt-4o` | 2 | 3,600 | 0 | 460 | $1.8000 |",
      "| `gpt-4o-mini` | 3 | 3,100 | 200 (6 %) | 410 | $1.2600 |",
      "| `@cmd-model` | 1 | 100 | 0 | 10 | $0.0004 |",
      "| ⚠ `house_model` (no price: counted as $0) | 1 | 500 | 0 | 50 | $0.0000 |",
    ]);
    expect(tableRows(page, "By key")).toEqual([
      "| Work key \\(…1234\\) | 2 | 5,000 | 1,200 (24 %) | 600 | $2.50 |",
      "| shared endpoint | 5 | 5,700 | 0 | 770 | $2.26 |",
      '| =HYPERLINK\\("http://evil.example","open"\\) \\(…5678\\) | 1 | 600 | 0 | 60 | $0.30 |',
    ]);
    expect(topRunIds(page)).toEqual([s.runs.RA3, s.runs.RB1, s.runs.RA1, s.runs.RA4]);
  });

  it("HTML: two SVG charts, a bar per day with spend, a segment per kind of token, tooltips, the warning", async () => {
    const browser = await login(app, s.w, s.w.alice);
    const res = await browser.get("/subagents/alpha/usage");
    expect(res.statusCode).toBe(200);
    const [spend, tokens] = charts(res.body);
    // The phone's charts draw the same bars on a canvas its labels read on (issue 30).
    expect(charts(res.body, "narrow")).toEqual([spend, tokens]);
    expect(res.body.match(/<svg class="chart narrow" viewBox="0 0 340 /g)).toHaveLength(2);
    expect(spend!.bars).toHaveLength(30);
    expect(tokens!.bars).toHaveLength(30);
    const days = Array.from({ length: 30 }, (_, i) => new Date(windowStart().getTime() + i * DAY));
    const rowsOn = (d: Date) => s.rows.alpha.filter((r) => dayKey(r.at) === dayKey(d));
    // Spend: one segment on each day that cost something (today, 3 days ago, the oldest day).
    expect(spend!.bars.map((b) => b.fills.length)).toEqual(
      days.map((d) => (sums(rowsOn(d)).cost > 0 ? 1 : 0)),
    );
    expect(spend!.bars.filter((b) => b.fills.length)).toHaveLength(3);
    // Tokens: uncached input, cached input and output, each only when there is some.
    expect(tokens!.bars.map((b) => b.fills.length)).toEqual(
      days.map((d) => {
        const t = sums(rowsOn(d));
        return [t.input - t.cached, t.cached, t.output].filter((v) => v > 0).length;
      }),
    );
    expect(tokens!.bars.reduce((a, b) => a + b.fills.length, 0)).toBe(10);
    expect(spend!.bars[29]!.tip).toBe(`${shortDay(days[29]!)}: $1.25`);
    expect(spend!.bars[0]!.tip).toBe(`${shortDay(days[0]!)}: $0.010`);
    expect(spend!.bars[1]!.tip).toBe(`${shortDay(days[1]!)}: $0`);
    expect(tokens!.bars[26]!.tip).toBe(
      `${shortDay(days[26]!)}: 4.5k (uncached input 3.0k, cached input 1.0k, output 500)`,
    );
    // The monthly limit as a daily line on the spend chart.
    const now = new Date();
    const daysInMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0)).getUTCDate();
    expect(res.body).toContain('stroke-dasharray="5 4"');
    expect(res.body).toContain(`${usd(Math.round(100_000_000 / daysInMonth))}/day`);
    // The unpriced model, flagged in the rendered table, its id intact.
    expect(res.body).toContain("⚠ <code>house_model</code> (no price: counted as $0)");
    expect(res.body).toContain("Some models have no price");
    // The owner's form to change the limit.
    expect(res.body).toContain('data-action="set_cost_limit"');
  });

  it("a sub-cent day reads as spend, in the table and in the chart's tooltip", async () => {
    const page = await body(s.w, s.w.alice, "/subagents/beta/usage");
    const day = dayAt(5);
    expect(tableRows(page, "Last 30 days")).toContain(`| ${dayKey(day)} | 1 | 100 | 0 | 10 | $0.0004 |`);
    const browser = await login(app, s.w, s.w.alice);
    const [spend] = charts((await browser.get("/subagents/beta/usage")).body);
    expect(spend!.bars[24]!.tip).toBe(`${shortDay(day)}: $0.0004`);
    expect(spend!.bars[24]!.fills).toHaveLength(1);
  });
});

describe("who sees whose usage", () => {
  let s: Awaited<ReturnType<typeof spendWorld>>;
  beforeAll(async () => {
    s = await spendWorld();
  });

  it("a person sees their own agents only; another person's agent is a 404", async () => {
    const alice = await body(s.w, s.w.alice, "/usage");
    expect(tableRows(alice, "Agents this month").map((l) => l.split(" | ")[0])).toEqual(
      expect.arrayContaining(["| [@alpha](/subagents/alpha/usage)", "| [@beta](/subagents/beta/usage)"]),
    );
    expect(alice).not.toContain("@gamma");
    // No owner column: they are all hers.
    expect(section(alice, "Agents this month")).toContain(
      "| agent | spent | limit | projected | calls | status |",
    );
    // ?scope=mine changes nothing for a non-admin, and asking for the workspace gives nothing more.
    expect(await body(s.w, s.w.alice, "/usage?scope=mine")).not.toContain("@gamma");

    for (const url of ["/subagents/gamma/usage", "/subagents/gamma/usage.csv"])
      expect((await get(s.w, s.w.alice, url)).statusCode).toBe(404);
    const bob = await body(s.w, s.w.bob, "/usage");
    expect(tableRows(bob, "Agents this month")).toHaveLength(1);
    expect(bob).toContain("[@gamma](/subagents/gamma/usage)");
    expect(bob).toContain(`**${monthName()} so far: $4.00**`);
    // Carol has no agents and is no admin (yet).
    expect(await body(s.w, s.w.carol, "/usage")).toContain("_No subagents yet._");
    expect((await get(s.w, s.w.carol, "/subagents/gamma/usage")).statusCode).toBe(404);
  });

  it("a workspace admin sees every agent with its owner, the workspace's totals, and ?scope=mine", async () => {
    await db().user.update({ where: { id: s.w.carol.id }, data: { tenantAdmin: true } });
    const page = await body(s.w, s.w.carol, "/usage");
    expect(page).toContain("# Workspace usage");
    expect(page).toContain("workspace admin");
    expect(page).toContain("](/usage?scope=mine)");
    const all = [...s.rows.alpha, ...s.rows.beta, ...s.rows.gamma];
    expect(page).toContain(
      `**${monthName()} so far: ${monthTotal([s.rows.alpha, s.rows.beta, s.rows.gamma])}**`,
    );
    const agents = tableRows(page, "Agents this month").map((l) => l.split(" | ").slice(0, 2).join(" | "));
    expect(agents).toHaveLength(3);
    expect(agents).toEqual(
      expect.arrayContaining([
        "| [@alpha](/subagents/alpha/usage) | @alice",
        "| [@beta](/subagents/beta/usage) | @alice",
        "| [@gamma](/subagents/gamma/usage) | @bob",
      ]),
    );
    expect(tableRows(page, "Last 30 days")).toEqual([...dayLines(all), expect.stringContaining("**9**")]);
    // Bob's run is the costliest in the workspace.
    expect(topRunIds(page)[0]).toBe(s.runs.RG1);
    expect(page).toContain("[Download CSV](/usage.csv)");

    const mine = await body(s.w, s.w.carol, "/usage?scope=mine");
    expect(mine).toContain("# Your agents' usage");
    expect(mine).toContain("[the whole workspace](/usage)");
    expect(mine).toContain("_No subagents yet._");
    expect(mine).toContain(`**${monthName()} so far: $0.00**`);
    expect(mine).toContain("[Download CSV](/usage.csv?scope=mine)");
    expect(tableRows(mine, "Last 30 days").at(-1)).toBe(
      "| **30 days** | **0** | **0** | **0** | **0** | **$0.00** |",
    );
  });

  it("an admin reads another's agent page but cannot change its limit or resume it", async () => {
    await db().user.update({ where: { id: s.w.carol.id }, data: { tenantAdmin: true } });
    const page = await body(s.w, s.w.carol, "/subagents/gamma/usage");
    expect(page).toContain(`**${monthName()} so far: $4.00** of its $100.00 limit (4%)`);
    expect(actionNames(page)).toEqual([]);
    const html = (await (await login(app, s.w, s.w.carol)).get("/subagents/gamma/usage")).body;
    expect(html).toContain('<svg class="chart wide"');
    expect(html).not.toContain("actions/set_cost_limit");

    const before = await db().user.findUniqueOrThrow({ where: { id: s.gamma.id } });
    const limit = await md(app, s.w, s.w.carol, "POST", "/subagents/gamma/usage/actions/set_cost_limit", {
      monthly_limit_usd: 1000,
    });
    expect(limit.statusCode).toBe(403);
    expect(limit.body).toContain("only its owner can");
    expect((await get(s.w, s.w.carol, "/subagents/gamma/usage/actions/set_cost_limit")).statusCode).toBe(403);
    // Even when the limit has paused it, resuming is the owner's call.
    await db().user.update({
      where: { id: s.gamma.id },
      data: {
        pausedAt: new Date(),
        pausedKind: "cost_limit",
        pausedReason: "reached its monthly cost limit",
      },
    });
    const resume = await md(
      app,
      s.w,
      s.w.carol,
      "POST",
      "/subagents/gamma/usage/actions/resume_subagent",
      {},
    );
    expect(resume.statusCode).toBe(403);
    const after = await db().user.findUniqueOrThrow({ where: { id: s.gamma.id } });
    expect(after.agentConfig).toEqual(before.agentConfig);
    expect(after.pausedKind).toBe("cost_limit");

    // Its owner can do both.
    const own = await md(app, s.w, s.w.bob, "POST", "/subagents/gamma/usage/actions/set_cost_limit", {
      monthly_limit_usd: 1000,
      alert_thresholds_usd: "10, 100",
    });
    expect(own.statusCode).toBe(200);
    expect(own.body).toContain("@gamma is running again");
    const mine = await db().user.findUniqueOrThrow({ where: { id: s.gamma.id } });
    expect(mine.agentConfig).toMatchObject({ cost_limit_usd: 1000, alert_thresholds_usd: [10, 100] });
    expect(mine.pausedAt).toBeNull();
  });

  it("another workspace sees none of it, on either host", async () => {
    const other = await makeWorld("x");
    await db().user.update({ where: { id: other.alice.id }, data: { tenantAdmin: true } });
    const page = await body(other, other.alice, "/usage");
    expect(page).toContain("_No subagents yet._");
    for (const h of ["alpha", "beta", "gamma", "house_model", "Work key"]) expect(page).not.toContain(h);
    for (const url of ["/subagents/alpha/usage", "/subagents/gamma/usage", "/subagents/alpha/usage.csv"])
      expect((await get(other, other.alice, url)).statusCode).toBe(404);
    const csv = await get(other, other.alice, "/usage.csv");
    expect(csv.body.trim().split("\n")).toHaveLength(1);
    // Its token is no credential on this workspace's host.
    for (const url of ["/usage", "/subagents/alpha/usage", "/usage.csv", "/usage/pricing"]) {
      const res = await app.inject({
        method: "GET",
        url,
        headers: { host: s.w.host, accept: "text/markdown", authorization: `Bearer ${other.alice.token}` },
      });
      expect(res.statusCode).toBe(401);
      expect(res.body).not.toContain("alpha");
    }
  });

  it("a subagent sees nobody's spend, not even its own, even flagged as an admin", async () => {
    // Pages resolve for agents (their actions then answer 403, see capabilities.test.ts), so
    // /usage is the agent's view of the agents *it* owns: none. tenant_admin means nothing
    // on a subagent.
    await db().user.update({ where: { id: s.alpha.id }, data: { tenantAdmin: true } });
    const page = await body(s.w, s.alpha, "/usage");
    expect(page).toContain("# Your agents' usage");
    expect(page).toContain("_No subagents yet._");
    expect(page).toContain(`**${monthName()} so far: $0.00**`);
    expect(section(page, "By model")).toContain("_No calls in the last 30 days._");
    for (const h of ["@alpha", "@beta", "@gamma", "Work key"]) expect(page).not.toContain(h);
    for (const url of ["/subagents/alpha/usage", "/subagents/beta/usage", "/subagents/gamma/usage.csv"])
      expect((await md(app, s.w, s.alpha, "GET", url)).statusCode, url).toBe(404);
    const csv = await md(app, s.w, s.alpha, "GET", "/usage.csv");
    expect(csv.statusCode).toBe(200);
    expect(csv.body.trim().split("\n")).toHaveLength(1);
    const pricing = await body(s.w, s.alpha, "/usage/pricing");
    expect(actionNames(pricing)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// CSV

/** RFC 4180: quoted cells may hold commas, quotes (doubled) and newlines. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(cell);
      cell = "";
    } else if (c === "\n") {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
    } else cell += c;
  }
  if (cell || row.length) rows.push([...row, cell]);
  return rows;
}

const HEADER =
  "time_utc,agent,run_id,step,model,priced,key,input_tokens,cached_input_tokens,output_tokens,cost_usd,latency_ms";
const micros = (usdText: string) => Math.round(Number(usdText) * 1e6);

describe("the CSV export", () => {
  let s: Awaited<ReturnType<typeof spendWorld>>;
  beforeAll(async () => {
    s = await spendWorld();
  });

  async function csv(who: Person, url: string) {
    const res = await get(s.w, who, url);
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/csv; charset=utf-8");
    expect(res.body.split("\n")[0]).toBe(HEADER);
    expect(res.body.endsWith("\n")).toBe(true);
    return { res, rows: parseCsv(res.body).slice(1) };
  }
  const byTime = (rows: Spec[]) => [...rows].sort((a, b) => a.at.getTime() - b.at.getTime());

  it("/usage.csv: one line per ledger row of the dashboard's 30 days, the same total as the page", async () => {
    const { res, rows } = await csv(s.w.alice, "/usage.csv");
    expect(res.headers["content-disposition"]).toBe(
      `attachment; filename="alice-usage-${dayKey(new Date())}.csv"`,
    );
    const want = byTime(inWindow([...s.rows.alpha, ...s.rows.beta]));
    expect(rows).toHaveLength(want.length);
    expect(rows.map((r) => [r[0], r[1]])).toEqual(want.map((r) => [r.at.toISOString(), r.agent.handle]));
    const cost = rows.reduce((a, r) => a + micros(r[10]!), 0);
    expect(cost).toBe(sums(want).cost);
    // The page's "30 days" line says the same.
    const page = await body(s.w, s.w.alice, "/usage");
    expect(tableRows(page, "Last 30 days").at(-1)).toContain(`| **${want.length}** |`);
    expect(tableRows(page, "Last 30 days").at(-1)).toContain(`**${dayShares(want).cost.total}**`);
    // Neither the row from one minute before the window nor the older one.
    expect(rows.map((r) => r[7])).not.toContain("9000");
    expect(rows.map((r) => r[7])).not.toContain("700");
  });

  it("every column of a row, and formulas defused (a key label, a model id)", async () => {
    const { rows } = await csv(s.w.alice, "/subagents/beta/usage.csv");
    expect(rows).toEqual(
      [
        [
          dayAt(10).toISOString(),
          "beta",
          "",
          "1",
          "gpt-4o",
          "true",
          `'${EVIL_LABEL} (...5678)`,
          "600",
          "0",
          "60",
          "0.300000",
          "250",
        ],
        [
          dayAt(5).toISOString(),
          "beta",
          "",
          "1",
          "'@cmd-model",
          "true",
          "shared",
          "100",
          "0",
          "10",
          "0.000400",
          "250",
        ],
        [
          dayAt(1, 5).toISOString(),
          "beta",
          s.runs.RB1!,
          "1",
          "gpt-4o",
          "true",
          "shared",
          "3000",
          "0",
          "400",
          "1.500000",
          "250",
        ],
      ].sort((a, b) => a[0]!.localeCompare(b[0]!)),
    );
    // On the wire: the label's quotes doubled, the cell quoted, the ' in front.
    const raw = (await get(s.w, s.w.alice, "/subagents/beta/usage.csv")).body;
    expect(raw).toContain(`,"'=HYPERLINK(""http://evil.example"",""open"") (...5678)",`);
    // No cell starts like a formula.
    for (const cell of rows.flat()) expect(cell).not.toMatch(/^[=+\-@]/);
  });

  it("an agent's CSV holds its rows only", async () => {
    const { res, rows } = await csv(s.w.alice, "/subagents/alpha/usage.csv");
    expect(res.headers["content-disposition"]).toBe(
      `attachment; filename="alpha-usage-${dayKey(new Date())}.csv"`,
    );
    const want = byTime(inWindow(s.rows.alpha));
    expect(rows.map((r) => [r[0], r[1], r[4], r[6]])).toEqual(
      want.map((r) => [r.at.toISOString(), "alpha", r.model, r.key ? "Work key (...1234)" : "shared"]),
    );
    expect(rows.find((r) => r[4] === "house_model")?.[5]).toBe("false");
  });

  it("scopes: the admin's whole workspace, ?scope=mine, and nothing of another workspace", async () => {
    const other = await makeWorld("x");
    const theirs = await makeAgent(other, other.alice, "alpha");
    await insertLedger(other, [
      {
        agent: theirs,
        at: dayAt(0),
        model: "other-model",
        key: null,
        input: 1,
        cached: 0,
        output: 1,
        cost: 123,
        run: null,
      },
    ]);
    await db().user.update({ where: { id: s.w.carol.id }, data: { tenantAdmin: true } });
    const all = await csv(s.w.carol, "/usage.csv");
    expect(all.res.headers["content-disposition"]).toBe(
      `attachment; filename="${s.w.tenant.subdomain}-usage-${dayKey(new Date())}.csv"`,
    );
    const want = inWindow([...s.rows.alpha, ...s.rows.beta, ...s.rows.gamma]);
    expect(all.rows).toHaveLength(want.length);
    expect(all.rows.reduce((a, r) => a + micros(r[10]!), 0)).toBe(sums(want).cost);
    expect(new Set(all.rows.map((r) => r[1]))).toEqual(new Set(["alpha", "beta", "gamma"]));
    expect(all.res.body).not.toContain("other-model");
    // Their alpha's CSV is theirs; ours is ours.
    expect((await csv(s.w.alice, "/subagents/alpha/usage.csv")).res.body).not.toContain("other-model");
    const mine = await csv(s.w.carol, "/usage.csv?scope=mine");
    expect(mine.res.headers["content-disposition"]).toBe(
      `attachment; filename="carol-usage-${dayKey(new Date())}.csv"`,
    );
    expect(mine.rows).toEqual([]);
    const bob = await csv(s.w.bob, "/usage.csv");
    expect(bob.rows.map((r) => r[1])).toEqual(["gamma"]);
    // The other workspace's token, on this host: no credential.
    const res = await app.inject({
      method: "GET",
      url: "/usage.csv",
      headers: { host: s.w.host, authorization: `Bearer ${other.alice.token}` },
    });
    expect(res.statusCode).toBe(401);
    expect(res.body).not.toContain("time_utc");
  });

  it("streams past one batch: every row once, in time order", async () => {
    const w = await makeWorld();
    const bulk = await makeAgent(w, w.alice, "bulk");
    // More than the export's 5,000-row batch; 20 days, so all inside the window.
    await seedUsage(db(), {
      tenantId: w.tenant.id,
      agents: [{ id: bulk.id, ownerId: w.alice.id }],
      rows: 5_300,
      days: 20,
    });
    const res = await get(w, w.alice, "/subagents/bulk/usage.csv");
    expect(res.statusCode).toBe(200);
    const rows = parseCsv(res.body).slice(1);
    const ledger = await db().llmUsage.findMany({
      where: { agentId: bulk.id, createdAt: { gte: windowStart() } },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    });
    expect(ledger.length).toBeGreaterThan(5_000);
    expect(rows).toHaveLength(ledger.length);
    expect(rows.map((r) => `${r[0]} ${r[2]} ${r[3]}`)).toEqual(
      ledger.map((l) => `${l.createdAt.toISOString()} ${l.runId} ${l.stepNumber}`),
    );
    expect(rows.reduce((a, r) => a + micros(r[10]!), 0)).toBe(
      ledger.reduce((a, l) => a + Number(l.costMicros), 0),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Month vs limit

describe("the month against the limit", () => {
  it("projectMonth: this month's pace carried to its last day", () => {
    // Half of November gone: twice the spend.
    expect(projectMonth(1_000_000, new Date("2026-11-16T00:00:00Z"))).toBe(2_000_000);
    // A quarter of a 28-day February.
    expect(projectMonth(700_000, new Date("2026-02-08T00:00:00Z"))).toBe(2_800_000);
    // Half of a leap February (29 days): 14.5 days in.
    expect(projectMonth(500_000, new Date("2028-02-15T12:00:00Z"))).toBe(1_000_000);
    // The last hour of December: 743 of 744 hours.
    expect(projectMonth(743_000, new Date("2026-12-31T23:00:00Z"))).toBe(744_000);
    // The first minutes of a month count as an hour, so a first call is not projected to infinity.
    expect(projectMonth(1_000, new Date("2026-11-01T00:10:00Z"))).toBe(720_000);
    expect(projectMonth(0, new Date("2026-11-20T00:00:00Z"))).toBe(0);
  });

  /** An agent that spent $2.50 today, with `limit` dollars a month. */
  async function meter(limit: number) {
    const w = await makeWorld();
    const agent = await makeAgent(w, w.alice, "meter", { cost_limit_usd: limit });
    await insertLedger(w, [
      {
        agent,
        at: dayAt(0),
        model: "gpt-4o",
        key: null,
        input: 1000,
        cached: 0,
        output: 100,
        cost: 2_500_000,
        run: null,
      },
    ]);
    return w;
  }
  /** The page's month line, and the projections just before and just after it was made. */
  async function monthLine(w: World) {
    const before = projectMonth(2_500_000, new Date());
    const page = await body(w, w.alice, "/subagents/meter/usage");
    const after = projectMonth(2_500_000, new Date());
    const line = page.split("\n").find((l) => l.startsWith(`**${monthName()} so far`))!;
    return { line, before, after };
  }
  const pace = (line: string) => micros(/on pace for \*\*\$([\d.]+)\*\*/.exec(line)![1]!);

  it("under the limit: its share of the limit, and on pace below it", async () => {
    const { line, before, after } = await monthLine(await meter(10_000));
    expect(line).toContain(`**${monthName()} so far: $2.50** of its $10000.00 limit (0%)`);
    // The projection shrinks as the month goes on: the page's lies between the two, to the cent.
    expect(pace(line)).toBeGreaterThanOrEqual(Math.floor(after / 10_000) * 10_000);
    expect(pace(line)).toBeLessThanOrEqual(Math.ceil(before / 10_000) * 10_000);
    expect(line).not.toContain("over the limit");
    expect(line).not.toContain("limit reached");
    expect((await monthLine(await meter(10))).line).toContain("$2.50** of its $10.00 limit (25%)");
  });

  it("on pace past the limit: 'over the limit'", async () => {
    // A limit between what it spent and where it is heading, whatever the day of the month.
    const projected = projectMonth(2_500_000, new Date());
    const limit = (2_500_000 + (projected - 2_500_000) / 2) / 1e6;
    expect(limit).toBeGreaterThan(2.5);
    const w = await meter(limit);
    const { line } = await monthLine(w);
    expect(line).toContain(
      `of its ${usd(Math.round(limit * 1e6))} limit (${Math.round((2.5 / limit) * 100)}%)`,
    );
    expect(line).toContain("— **over the limit**: it will pause when it gets there");
  });

  it("at or past the limit: 'limit reached', not a forecast", async () => {
    const { line } = await monthLine(await meter(2));
    expect(line).toContain("$2.50** of its $2.00 limit (125%)");
    expect(line).toContain("**limit reached**");
    expect(line).not.toContain("on pace");
  });
});

// ---------------------------------------------------------------------------------------------
// Nothing yet

describe("before any usage", () => {
  it("a person without agents: zeros and 'No calls', in markdown and HTML", async () => {
    const w = await makeWorld();
    const page = await body(w, w.carol, "/usage");
    expect(page).toContain(`**${monthName()} so far: $0.00** · on pace for **$0.00** by month end`);
    expect(page).toContain("0 model calls and 0 tokens this month");
    expect(page).toContain("_No subagents yet._");
    expect(section(page, "By model")).toContain("_No calls in the last 30 days._");
    expect(section(page, "By key")).toContain("_No calls in the last 30 days._");
    expect(section(page, "Top runs by cost")).toContain("_No runs in the last 30 days._");
    expect(tableRows(page, "Last 30 days")).toHaveLength(31);
    const html = await (await login(app, w, w.carol)).get("/usage");
    expect(html.statusCode).toBe(200);
    // No data: no empty axes ("1, 1, 1, 0, 0"), a sentence saying there is nothing yet.
    expect(charts(html.body)).toHaveLength(0);
    expect(html.body).toContain('<p class="chart-empty">Nothing spent in the last 30 days yet.</p>');
    expect(html.body).toContain('<p class="chart-empty">No tokens used in the last 30 days yet.</p>');
    expect(html.body).not.toContain("NaN");
    expect(html.body).not.toContain("Infinity");
  });

  it("an agent that never ran: its page at $0 of its limit, and a CSV with just the header", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice, "idle");
    const page = await body(w, w.alice, "/subagents/idle/usage");
    expect(page).toContain(
      `**${monthName()} so far: $0.00** of its $100.00 limit (0%) · on pace for **$0.00** by month end`,
    );
    expect(page).not.toContain("over the limit");
    expect(section(page, "By model")).toContain("_No calls in the last 30 days._");
    expect(actionNames(page)).toEqual(["set_cost_limit"]);
    const html = await (await login(app, w, w.alice)).get("/subagents/idle/usage");
    expect(html.statusCode).toBe(200);
    expect(charts(html.body)).toHaveLength(0);
    expect(html.body).toContain("Nothing spent in the last 30 days yet.");
    expect(html.body).not.toContain("NaN");
    const csv = await get(w, w.alice, "/subagents/idle/usage.csv");
    expect(csv.statusCode).toBe(200);
    expect(csv.body).toBe(`${HEADER}\n`);
    const mine = await body(w, w.alice, "/usage");
    expect(tableRows(mine, "Agents this month")).toEqual([
      "| [@idle](/subagents/idle/usage) | $0.00 | $100.00 | $0.00 | 0 | active |",
    ]);
  });
});
