// The owner's controls over an agent at /subagents/:handle/settings: capabilities, the
// approval list, approval mode and expiry, ordered policy rules. Every action in both
// formats (markdown API and browser form), bad input, what the page shows, and that only
// the owner sees or changes any of it.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALWAYS_ALLOWED, ALWAYS_BLOCKED, GRANTABLE } from "../src/services/agents/policy/capabilities.ts";
import { makeAgent } from "./helpers/agents.ts";
import { actionNames, type Browser, buildTestApp, login, makeWorld, md, type World } from "./helpers/app.ts";
import { configOf, perAction } from "./helpers/approvals.ts";
import { issuesOf } from "./helpers/bad-input.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app.close();
});

const PAGE = "/subagents/scout/settings";
const ACTIONS = [
  "set_capabilities",
  "set_approval_requirements",
  "set_approval_mode",
  "try_rule",
  "add_rule",
  "remove_rule",
];

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

/** The ids of the checked boxes in one settings form (`f-<action>--<name>`). */
async function checked(browser: Browser, action: string) {
  const html = (await browser.get(PAGE)).body;
  const re = new RegExp(`id="f-${action}--(\\w+)" name="\\w+" value="true"( checked)?>`, "g");
  const boxes = [...html.matchAll(re)];
  expect(boxes.map((m) => m[1])).toEqual([...GRANTABLE]);
  return boxes.filter((m) => m[2]).map((m) => m[1]);
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
    expect(await checked(browser, "set_capabilities")).toEqual(["confirm_read", "add_comment"]);
    expect(await checked(browser, "set_approval_requirements")).toEqual([]);
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
    expect(await checked(browser, "set_capabilities")).toEqual(["create_note", "vote"]);
    expect(await checked(browser, "set_approval_requirements")).toEqual(["vote"]);
    const html = (await browser.get(PAGE)).body;
    expect(html).toContain('<option value="wait" selected>wait</option>');
    expect(html).toMatch(/name="expiry_hours" value="48"/);
    const page = await pageBody(w);
    expect(page).toContain("**Yours to grant** (content): 2 of 13 granted");
    expect(page).toContain("Runs **wait for** the outcome; unreviewed actions expire after 48 h.");
    expect(page).toContain(
      [
        "| # | rule | action | params must match | decision |",
        "|---|---|---|---|---|",
        "| 1 | no-secrets | `add_comment` | `text` ~ `secret` | **deny** |",
        "| 2 | review-all | `*` | — | **require_approval** |",
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

describe("capabilities and the approval list", () => {
  it("markdown: every grantable action as a boolean; it takes effect on the agent's pages", async () => {
    const { w, scout, post } = await setup();
    const res = await post("set_capabilities", perAction(["add_comment", "create_decision"]));
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("**It may now use 2 of 13 content actions**");
    expect((await configOf(scout.id)).capabilities).toEqual(["add_comment", "create_decision"]);
    expect(actionNames((await md(app, w, scout, "GET", "/studios/general")).body)).toEqual([
      "create_decision",
    ]);
    const req = await post("set_approval_requirements", perAction(["create_decision"]));
    expect(req.statusCode).toBe(200);
    expect(req.body).toContain("**1 action now needs your approval**");
    expect((await configOf(scout.id)).requires_approval).toEqual(["create_decision"]);
    expect((await configOf(scout.id)).capabilities).toEqual(["add_comment", "create_decision"]);
    const none = await post("set_capabilities", perAction([]));
    expect(none.body).toContain("It may now use 0 of 13 content actions");
    expect(actionNames((await md(app, w, scout, "GET", "/studios/general")).body)).toEqual([]);
  });

  it("browser: unticked boxes are false; 303 back to the page with the notice and the boxes as saved", async () => {
    const { scout, browser } = await setup();
    const res = await browser.post(`${PAGE}/actions/set_capabilities`, { create_note: "true", vote: "on" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(PAGE);
    expect((await browser.get(PAGE)).body).toContain("It may now use 2 of 13 content actions");
    expect(await checked(browser, "set_capabilities")).toEqual(["create_note", "vote"]);
    const req = await browser.post(`${PAGE}/actions/set_approval_requirements`, { create_note: "true" });
    expect(req.statusCode).toBe(303);
    expect(await checked(browser, "set_approval_requirements")).toEqual(["create_note"]);
    expect(await configOf(scout.id)).toMatchObject({
      capabilities: ["create_note", "vote"],
      requires_approval: ["create_note"],
    });
  });

  it("bad input: missing or non-boolean values and actions that cannot be granted are 400s; nothing changes", async () => {
    const { scout, post } = await setup({ capabilities: ["vote"] });
    const cases: [Record<string, unknown>, string][] = [
      [{ ...perAction([]), vote: undefined }, "`vote`: required"],
      [{ ...perAction([]), vote: "maybe" }, "`vote`"],
      [{ ...perAction([]), approve_action: true }, "`approve_action`: unknown parameter"],
    ];
    for (const action of ["set_capabilities", "set_approval_requirements"])
      for (const [body, message] of cases) {
        const res = await post(action, JSON.parse(JSON.stringify(body)));
        expect(res.statusCode).toBe(400);
        expect(res.body).toContain(message);
      }
    expect(await configOf(scout.id)).toMatchObject({ capabilities: ["vote"] });
    expect(await configOf(scout.id)).not.toHaveProperty("requires_approval");
  });
});

describe("approval mode", () => {
  it("markdown and browser: mode and expiry are saved; out-of-range expiry and unknown modes are 400s", async () => {
    const { scout, browser, post } = await setup();
    const res = await post("set_approval_mode", { mode: "wait", expiry_hours: 720 });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("Runs **wait for** the outcome; unreviewed actions expire after 720 h.");
    expect(await configOf(scout.id)).toMatchObject({ approval_mode: "wait", approval_expiry_hours: 720 });
    const bad: [Record<string, unknown>, string][] = [
      [{ mode: "wait", expiry_hours: 0 }, "`expiry_hours`: at least 1"],
      [{ mode: "wait", expiry_hours: 721 }, "`expiry_hours`: at most 720"],
      [{ mode: "wait", expiry_hours: 1.5 }, "`expiry_hours`: a whole number"],
      [{ mode: "later", expiry_hours: 5 }, "`mode`"],
      [{ mode: "wait" }, "`expiry_hours`: required"],
    ];
    for (const [body, message] of bad) {
      const r = await post("set_approval_mode", body);
      expect(r.statusCode).toBe(400);
      expect(r.body).toContain(message);
    }
    const form = await browser.post(`${PAGE}/actions/set_approval_mode`, {
      mode: "continue",
      expiry_hours: "6",
    });
    expect(form.statusCode).toBe(303);
    expect((await browser.get(PAGE)).body).toContain("unreviewed actions expire after 6 h");
    const badForm = await browser.post(`${PAGE}/actions/set_approval_mode`, {
      mode: "wait",
      expiry_hours: "0",
    });
    expect(badForm.statusCode).toBe(400);
    expect(issuesOf(badForm.body).expiry_hours).toBe("at least 1");
    expect(await configOf(scout.id)).toMatchObject({ approval_mode: "continue", approval_expiry_hours: 6 });
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
      "| 2 | a | `add_comment` | `text` ~ `^ok`, `reply_to` ~ `\\w+` | **require_approval** |",
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
      set_capabilities: perAction([]),
      set_approval_requirements: perAction(["vote"]),
      set_approval_mode: { mode: "wait", expiry_hours: 1 },
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
