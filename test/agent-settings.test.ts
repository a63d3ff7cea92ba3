// The owner's controls over an agent at /subagents/:handle/settings: one form for what it
// may use, what waits for approval and how reviews work; ordered policy rules. Every action in both
// formats (markdown API and browser form), bad input, what the page shows, and that only
// the owner sees or changes any of it.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALWAYS_ALLOWED, ALWAYS_BLOCKED, GRANTABLE } from "../src/services/agents/policy/capabilities.ts";
import { makeAgent } from "./helpers/agents.ts";
import { actionNames, type Browser, buildTestApp, login, makeWorld, md, type World } from "./helpers/app.ts";
import { configOf, permissions } from "./helpers/approvals.ts";
import { issuesOf } from "./helpers/bad-input.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app.close();
});

const PAGE = "/subagents/scout/settings";
const ACTIONS = ["set_capabilities", "set_tool_level", "try_rule", "add_rule", "remove_rule"];

/** A world with alice's agent @scout (config as given), alice's browser and markdown poster. */
async function setup(config: Record<string, unknown> = {}) {
  const w = await makeWorld();
  const scout = await makeAgent(w, w.alice, "scout", config);
  const browser = await login(app, w, w.alice);
  const post = (action: string, body: Record<string, unknown>) =>
    md(app, w, w.alice, "POST", `${PAGE}/actions/${action}`, body);
  return { w, scout, browser, post };
}

/** The markdown page, before its `## Actions` section. */
const pageBody = async (w: World) => (await md(app, w, w.alice, "GET", PAGE)).body.split("\n## Actions")[0]!;

/** The level each grantable action's select shows in the one settings form, as `{ level: [actions] }`. */
async function levels(browser: Browser) {
  const html = (await browser.get(PAGE)).body;
  const selects = [...html.matchAll(/<select id="f-set_capabilities--(\w+)"[^>]*>([\s\S]*?)<\/select>/g)];
  const shown = selects.map((m) => [m[1]!, /<option value="(\w+)" selected>/.exec(m[2]!)?.[1]] as const);
  expect(shown.map(([a]) => a)).toEqual([...GRANTABLE, "approval_mode"]);
  const out: Record<string, string[]> = { off: [], on: [], approval: [] };
  for (const [a, level] of shown.slice(0, -1)) out[level!]!.push(a);
  return out;
}

const rule = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  action: "add_comment",
  decision: "require_approval",
  ...extra,
});

describe("what the page shows", () => {
  it("explains the always-allowed and never-allowed lists; an agent without a choice may comment and confirm reads", async () => {
    const { w, browser } = await setup({ capabilities: undefined });
    const page = (await md(app, w, w.alice, "GET", PAGE)).body;
    expect(page).toContain(`# What Agent scout may do`);
    // In words first; the names stay in the markdown for whoever looks one up.
    expect(page).toContain("**Always allowed**: reading any page it can see, searching");
    expect(page).toContain(`**Never allowed**: its identity, studio membership`);
    expect(page).toContain(`(${ALWAYS_BLOCKED.length} actions)`);
    const allowed = ALWAYS_ALLOWED.map((a) => `\`${a}\``).join(", ");
    const blocked = ALWAYS_BLOCKED.map((a) => `\`${a}\``).join(", ");
    expect(page).toContain(`Always allowed: ${allowed}. Never allowed: ${blocked}.`);
    expect(page).toContain(
      "**Yours to grant** (content): 2 of 13 granted. A new agent starts able to read and comment",
    );
    expect(page).toContain("Runs **carry on without** the outcome; unreviewed actions expire after 24 h.");
    expect(page).toContain("_No rules: actions in the approval list wait for you");
    expect(actionNames(page)).toEqual(ACTIONS);
    expect(await levels(browser)).toEqual({
      off: GRANTABLE.filter((g) => g !== "confirm_read" && g !== "add_comment"),
      on: ["confirm_read", "add_comment"],
      approval: [],
    });
  });

  it("shows the current settings: granted boxes checked, approval list, mode and expiry, rules in order", async () => {
    const { w, browser } = await setup({
      capabilities: ["create_note", "vote"],
      requires_approval: ["vote"],
      approval_mode: "wait",
      approval_expiry_hours: 48,
      rules: [
        { name: "no-secrets", action: "add_comment", params: { text: "secret" }, decision: "deny" },
        { name: "review-all", action: "*", params: {}, decision: "require_approval" },
      ],
    });
    const notGranted = GRANTABLE.filter((a) => a !== "create_note" && a !== "vote");
    expect(await levels(browser)).toEqual({ off: notGranted, on: ["create_note"], approval: ["vote"] });
    const html = (await browser.get(PAGE)).body;
    expect(html).toContain('<option value="wait" selected>the run waits for your decision</option>');
    expect(html).toMatch(/name="approval_expiry_hours" value="48"/);
    const page = await pageBody(w);
    expect(page).toContain("**Yours to grant** (content): 2 of 13 granted");
    expect(page).toContain("Runs **wait for** the outcome; unreviewed actions expire after 48 h.");
    expect(page).toContain(
      [
        "| # | rule | action | where | params must match | decision |",
        "|---|---|---|---|---|---|",
        "| 1 | no-secrets | `add_comment` | anywhere | `text` ~ `secret` | **deny** |",
        "| 2 | review-all | `*` | anywhere | — | **require_approval** |",
      ].join("\n"),
    );
  });

  // Regression: the markdown page (what the API and agents read) said how many capabilities
  // were granted but never which, nor which actions need approval (the forms carrying them
  // are HTML-only), so a markdown client could not read them before sending all 11 booleans.
  it("the markdown page names the granted actions and the approval list", async () => {
    const { w } = await setup({ capabilities: ["add_comment"], requires_approval: ["vote"] });
    const page = await pageBody(w);
    expect(page).toContain("`add_comment`");
    expect(page).toContain("`vote`");
    expect(page).not.toContain("`create_note`");
  });

  // Regression: a `|` in a param pattern was written into the rules table as is, so the GFM
  // table split the cell: `secret|private` showed as `secret` and the decision was lost.
  it("a pattern with | shows whole in the rules table", async () => {
    const { browser } = await setup({
      rules: [{ name: "hush", action: "add_comment", params: { text: "secret|private" }, decision: "deny" }],
    });
    const html = (await browser.get(PAGE)).body;
    expect(html).toContain("<code>secret|private</code>");
    expect(html).toContain("<strong>deny</strong>");
  });
});

describe("what it may do: one form, one Save", () => {
  it("markdown: a level per grantable action and the review settings; it takes effect on the agent's pages", async () => {
    const { w, scout, post } = await setup();
    const body = permissions(["add_comment"], { approval: ["create_decision"], mode: "wait", expiry: 720 });
    const res = await post("set_capabilities", body);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(
      "**Saved: it may use 2 of 13 content actions, 1 of them after your approval**",
    );
    expect(res.body).toContain("Runs **wait for** the outcome; unreviewed actions expire after 720 h.");
    expect(await configOf(scout.id)).toMatchObject({
      capabilities: ["add_comment", "create_decision"],
      requires_approval: ["create_decision"],
      approval_mode: "wait",
      approval_expiry_hours: 720,
    });
    expect(actionNames((await md(app, w, scout, "GET", "/studios/general")).body)).toEqual([
      "create_decision",
    ]);
    const none = await post("set_capabilities", permissions([]));
    expect(none.body).toContain("it may use 0 of 13 content actions");
    expect(actionNames((await md(app, w, scout, "GET", "/studios/general")).body)).toEqual([]);
    expect(await configOf(scout.id)).toMatchObject({ requires_approval: [], approval_mode: "continue" });
  });

  // Regression (issue 30): three forms, three Save buttons; ticking an approval and then
  // saving the capabilities form dropped the approval ("Waiting for your approval: nothing.").
  it("browser: the page has one settings form; one post saves capabilities, approvals and reviews together", async () => {
    const { scout, browser } = await setup();
    const html = (await browser.get(PAGE)).body;
    expect(html.match(/<form [^>]*data-action="set_capabilities"/g)).toHaveLength(1);
    expect(html).not.toContain('data-action="set_approval_requirements"');
    const form = Object.fromEntries(
      Object.entries(permissions(["create_note", "vote"], { approval: ["vote"], expiry: 6 })).map(
        ([k, v]) => [k, String(v)],
      ),
    );
    const res = await browser.post(PAGE, { _action: "set_capabilities", ...form });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(PAGE);
    const page = (await browser.get(PAGE)).body;
    expect(page).toContain("Saved: it may use 2 of 13 content actions, 1 of them after your approval");
    expect(page).toContain("unreviewed actions expire after 6 h");
    const off = GRANTABLE.filter((a) => a !== "create_note" && a !== "vote");
    expect(await levels(browser)).toEqual({ off, on: ["create_note"], approval: ["vote"] });
    expect(await configOf(scout.id)).toMatchObject({
      capabilities: ["create_note", "vote"],
      requires_approval: ["vote"],
      approval_expiry_hours: 6,
    });
  });

  it("bad input: a missing or unknown level, an action that cannot be granted, a bad expiry are 400s; nothing changes", async () => {
    const { scout, browser, post } = await setup({ capabilities: ["vote"] });
    const cases: [Record<string, unknown>, string][] = [
      [{ ...permissions([]), vote: undefined }, "`vote`: required"],
      [{ ...permissions([]), vote: true }, "`vote`"],
      [{ ...permissions([]), vote: "maybe" }, "`vote`"],
      [{ ...permissions([]), approve_action: "on" }, "`approve_action`: unknown parameter"],
      [{ ...permissions([]), approval_expiry_hours: 0 }, "at least 1"],
      [{ ...permissions([]), approval_expiry_hours: 721 }, "at most 720"],
      [{ ...permissions([]), approval_expiry_hours: 1.5 }, "a whole number"],
      [{ ...permissions([]), approval_mode: "later" }, "`approval_mode`"],
    ];
    for (const [body, message] of cases) {
      const res = await post("set_capabilities", JSON.parse(JSON.stringify(body)));
      expect(res.statusCode).toBe(400);
      expect(res.body).toContain(message);
    }
    const form = { _action: "set_capabilities", ...permissions([]), approval_expiry_hours: "0" };
    const bad = await browser.post(PAGE, form as Record<string, string>);
    expect(bad.statusCode).toBe(400);
    expect(issuesOf(bad.body).approval_expiry_hours).toBe("at least 1");
    expect(await configOf(scout.id)).toEqual({
      identity_prompt: "You help the team.",
      max_steps: 10,
      capabilities: ["vote"],
    });
  });
});

describe("rules", () => {
  it("add_rule (markdown): param patterns, `position` inserts in order, past the end appends", async () => {
    const { w, scout, post } = await setup();
    const first = await post("add_rule", rule("a", { param_patterns: "text=^ok\n\n reply_to = \\w+ " }));
    expect(first.statusCode).toBe(200);
    expect(first.body).toContain("**Rule “a” added**");
    expect((await post("add_rule", rule("b", { action: "*", decision: "deny" }))).statusCode).toBe(200);
    expect((await post("add_rule", rule("c", { position: 1, decision: "allow" }))).statusCode).toBe(200);
    expect((await post("add_rule", rule("d", { position: 3 }))).statusCode).toBe(200);
    expect((await post("add_rule", rule("e", { position: 99, action: "search" }))).statusCode).toBe(200);
    const rules = (await configOf(scout.id)).rules as { name: string }[];
    expect(rules.map((r) => r.name)).toEqual(["c", "a", "d", "b", "e"]);
    expect(rules[1]).toEqual({
      name: "a",
      action: "add_comment",
      decision: "require_approval",
      params: { text: "^ok", reply_to: "\\w+" },
    });
    const rows = (await pageBody(w)).split("\n").filter((l) => /^\| \d /.test(l));
    expect(rows.map((r) => r.split(" | ").slice(0, 2).join(" | "))).toEqual([
      "| 1 | c",
      "| 2 | a",
      "| 3 | d",
      "| 4 | b",
      "| 5 | e",
    ]);
    expect(rows[1]).toBe(
      "| 2 | a | `add_comment` | anywhere | `text` ~ `^ok`, `reply_to` ~ `\\w+` | **require_approval** |",
    );
  });

  it("add_rule and remove_rule in the browser: 303 back to the page; a bad regex shows the form again with the error", async () => {
    const { scout, browser } = await setup();
    const add = (form: Record<string, string>) => browser.post(`${PAGE}/actions/add_rule`, form);
    const ok = await add({
      name: "hush",
      action: "add_comment",
      decision: "deny",
      param_patterns: "text=secret\r\n",
      position: "",
    });
    expect(ok.statusCode).toBe(303);
    expect(ok.headers.location).toBe(PAGE);
    const html = (await browser.get(PAGE)).body;
    expect(html).toContain("Rule “hush” added");
    expect(html).toMatch(/<td>1<\/td>\s*<td>hush<\/td>/);
    const bad = await add({
      name: "broken",
      action: "add_comment",
      decision: "deny",
      param_patterns: "text=ok\r\ntext=(oops",
    });
    expect(bad.statusCode).toBe(400);
    expect(issuesOf(bad.body).param_patterns).toMatch(/^line 2: not a valid pattern: missing closing \)/);
    const gone = await browser.post(`${PAGE}/actions/remove_rule`, { name: "hush" });
    expect(gone.statusCode).toBe(303);
    expect((await browser.get(PAGE)).body).toContain("Rule “hush” removed");
    expect((await configOf(scout.id)).rules).toEqual([]);
  });

  it("bad input: bad regex or line, unknown or blocked action, duplicate name (409), unknown rule (404)", async () => {
    const { scout, post } = await setup();
    expect((await post("add_rule", rule("keep"))).statusCode).toBe(200);
    const cases: [Record<string, unknown>, number, string][] = [
      [
        rule("x", { param_patterns: "text=(unclosed" }),
        400,
        "`param_patterns`: line 1: not a valid pattern: missing closing )",
      ],
      [
        rule("x", { param_patterns: "text=ok\njust words" }),
        400,
        "`param_patterns`: line 2: write param=regex",
      ],
      [rule("x", { param_patterns: `text=${"a".repeat(201)}` }), 400, "line 1: regex longer than 200"],
      [rule("x", { action: "fly" }), 400, "`action`"],
      [rule("x", { action: "approve_action" }), 400, "`action`"],
      [rule("x", { decision: "maybe" }), 400, "`decision`"],
      [rule("x", { position: 0 }), 400, "`position`: at least 1"],
      [rule(""), 400, "`name`"],
      [rule("keep", { decision: "deny" }), 409, "A rule named “keep” already exists"],
    ];
    for (const [body, status, message] of cases) {
      const res = await post("add_rule", body);
      expect(res.statusCode).toBe(status);
      expect(res.body).toContain(message);
    }
    const missing = await post("remove_rule", { name: "nope" });
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toContain("No rule named “nope”");
    expect((await configOf(scout.id)).rules).toEqual([rule("keep", { params: {} })]);
  });

  it("concurrent saves lose nothing: five rules added at once are all kept", async () => {
    const { scout, post } = await setup();
    const res = await Promise.all(["r1", "r2", "r3", "r4", "r5"].map((n) => post("add_rule", rule(n))));
    expect(res.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200]);
    const names = ((await configOf(scout.id)).rules as { name: string }[]).map((r) => r.name);
    expect(names.sort()).toEqual(["r1", "r2", "r3", "r4", "r5"]);
  });
});

describe("only the owner", () => {
  it("bob, carol, the agent itself: 404 on the page and every action; another tenant: 401; nothing changes", async () => {
    const { w, scout } = await setup();
    const other = await makeWorld();
    const bodies: Record<string, Record<string, unknown>> = {
      set_capabilities: permissions([], { approval: ["vote"] }),
      set_tool_level: { tool: "gh__search_issues", level: "on" },
      add_rule: rule("sneaky"),
      remove_rule: { name: "sneaky" },
    };
    for (const who of [w.bob, w.carol, scout]) {
      expect((await md(app, w, who, "GET", PAGE)).statusCode).toBe(404);
      for (const a of ACTIONS) {
        expect((await md(app, w, who, "POST", `${PAGE}/actions/${a}`, bodies[a])).statusCode).toBe(404);
        expect((await md(app, w, who, "GET", `${PAGE}/actions/${a}`)).statusCode).toBe(404);
      }
    }
    const bobB = await login(app, w, w.bob);
    expect((await bobB.get(PAGE)).statusCode).toBe(404);
    expect((await bobB.post(`${PAGE}/actions/set_capabilities`, {})).statusCode).toBe(404);
    const foreign = { ...other, host: w.host };
    expect((await md(app, foreign, other.alice, "GET", PAGE)).statusCode).toBe(401);
    expect(
      (await md(app, foreign, other.alice, "POST", `${PAGE}/actions/add_rule`, rule("x"))).statusCode,
    ).toBe(401);
    expect((await md(app, other, other.alice, "GET", PAGE)).statusCode).toBe(404);
    expect(await configOf(scout.id)).toEqual({
      identity_prompt: "You help the team.",
      max_steps: 10,
      capabilities: [...GRANTABLE],
    });
  });
});
