// Markdown that used to break the renderer: 2,000 nested `>` overflowed marked's stack
// (the note's HTML page answered 500), and a thread quoted level by level took marked
// 2^depth time. Every page that shows user markdown, in both formats and as an agent
// reads it; the renderer itself on the worst shapes we know; and, within the bound, the
// renderer's output is still exactly marked's.
import type { FastifyInstance } from "fastify";
import { Marked } from "marked";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readPage } from "../src/services/catalog/markdown-api.ts";
import { parseMentions } from "../src/services/mentions.ts";
import { boundedMarked, MAX_NESTING } from "../src/services/registry/bounded-marked.ts";
import { markdownToHtml } from "../src/services/registry/html.ts";
import type { Actor, Ctx } from "../src/services/registry/types.ts";
import { makeAgent } from "./helpers/agents.ts";
import {
  act,
  type Browser,
  buildTestApp,
  login,
  makeWorld,
  md,
  type Person,
  testPrisma,
  type World,
} from "./helpers/app.ts";

/** Bottom-posted mail: each reply quotes the thread one level shallower than the line before. */
const thread = (levels: number, words = 1) =>
  Array.from({ length: levels }, (_, i) => `${">".repeat(levels - i)} ${"word ".repeat(words)}${i}`).join(
    "\n",
  );

/** Shapes marked could not survive, each within `max` characters. */
function deep(max: number): string {
  const parts = [
    `${">".repeat(Math.min(2000, max / 3))} deep @bob`,
    "1. ".repeat(max / 12),
    "> - ".repeat(max / 16),
    `${"*".repeat(max / 12)}x${"*".repeat(max / 12)}`,
  ];
  return parts.join("\n\n").slice(0, max);
}

const WORST: Record<string, string> = {
  "2,000 >": `${">".repeat(2000)} hi`,
  "20,000 >": ">".repeat(20_000),
  "nested ordered lists": "1. ".repeat(6000),
  "lists in quotes in lists": "> - ".repeat(5000),
  "a list indented level by level": Array.from({ length: 140 }, (_, i) => `${"  ".repeat(i)}- x`).join("\n"),
  "a mail thread 22 levels deep": thread(22),
  "a mail thread 40 levels deep, long lines": thread(40, 110),
  "emphasis 10,000 deep": `${"*".repeat(10_000)}x${"*".repeat(10_000)}`,
  "strong emphasis": `${"***".repeat(3000)}x${"***".repeat(3000)}`,
  strikethrough: `${"~~".repeat(5000)}x${"~~".repeat(5000)}`,
  "links in links": `${"[".repeat(3000)}x${"](/a)".repeat(3000)}`,
  "images in links": `${"[![".repeat(2000)}x${"](/a)](/b)".repeat(2000)}`,
};

describe("the renderer", () => {
  for (const [name, text] of Object.entries(WORST))
    it(`renders ${name} quickly, nesting at most ${MAX_NESTING} deep`, () => {
      const started = performance.now();
      const html = markdownToHtml(text);
      expect(performance.now() - started).toBeLessThan(2000);
      for (const tag of ["blockquote", "ul", "ol", "em", "strong", "del"])
        expect(nesting(html, tag), tag).toBeLessThanOrEqual(MAX_NESTING);
      expect(() => parseMentions(text)).not.toThrow();
    });

  it("shows a deeply quoted mail as nested quotes, then its deeper markers as typed", () => {
    const html = markdownToHtml(thread(25));
    expect(nesting(html, "blockquote")).toBe(MAX_NESTING);
    expect(html).toContain("&gt;&gt;&gt;&gt;&gt; word 0");
    expect(html).toContain("word 24");
  });

  it("finds a mention however deep it is", () => {
    expect(parseMentions(`${">".repeat(2000)} hi @bob`)).toEqual(["bob"]);
    expect(parseMentions(`${thread(30)} @carol`)).toEqual(["carol"]);
  });

  it("within the bound, renders exactly what marked renders", () => {
    const plain = new Marked({ gfm: true });
    const bounded = boundedMarked({ gfm: true });
    const pieces = [
      ">",
      "> ",
      ">>",
      "- ",
      "* ",
      "1. ",
      "2) ",
      "  ",
      "    ",
      "```",
      "a",
      "b c",
      "**x**",
      "_y_",
      "[l](/u)",
      "`c`",
      "---",
      "# h",
      "| a | b |",
      "|---|---|",
      "",
      "[a]: /x",
      "[a]",
      "~~d~~",
      "***",
      "<b>",
    ];
    let seed = 19;
    const random = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const differ: string[] = [];
    for (let i = 0; i < 3000; i++) {
      const lines = Array.from({ length: 1 + Math.floor(random() * 14) }, () =>
        Array.from(
          { length: Math.floor(random() * 6) },
          () => pieces[Math.floor(random() * pieces.length)],
        ).join(""),
      );
      const text = lines.join("\n");
      if (bounded.parse(text) !== plain.parse(text, { async: false })) differ.push(text);
    }
    expect(differ).toEqual([]);
  });
});

/** How deep `<tag>` elements nest in `html`. */
function nesting(html: string, tag: string): number {
  let depth = 0;
  let max = 0;
  for (const m of html.matchAll(new RegExp(`<(/?)${tag}>`, "g"))) {
    depth += m[1] ? -1 : 1;
    max = Math.max(max, depth);
  }
  return max;
}

describe("every page that shows user markdown", () => {
  let app: FastifyInstance;
  let w: World;
  let browser: Browser;
  let agent: Person;
  const pages: string[] = [];
  beforeAll(async () => {
    app = await buildTestApp();
    w = await makeWorld("deep");
    browser = await login(app, w, w.alice);
    const { location: note } = await act(w, w.alice, "/studios/general", "create_note", {
      title: "Deep",
      text: deep(20_000),
    });
    await act(w, w.bob, note, "add_comment", { text: deep(10_000) });
    const decision = await act(w, w.alice, "/studios/general", "create_decision", {
      question: "Deep?",
      description: deep(10_000),
      options: "yes\nno",
    });
    const commitment = await act(w, w.alice, "/studios/general", "create_commitment", {
      title: "Deep",
      critical_mass: 2,
      description: deep(10_000),
    });
    await act(w, w.alice, "/studios/general", "update_studio", { description: deep(2000) });
    await act(w, w.alice, "/u/alice/settings", "update_profile", { bio: deep(2000) });
    await act(w, w.alice, "/subagents", "create_subagent", {
      name: "Deep",
      handle: "deepagent",
      identity_prompt: deep(10_000),
    });
    const run = await act(w, w.alice, "/subagents/deepagent/run", "run_task", { task: deep(10_000) });
    agent = await makeAgent(w, w.alice, "scout", { identity_prompt: deep(10_000) });
    await act(w, agent, "/whoami", "update_scratchpad", { text: deep(4000) });
    pages.push(
      note,
      decision.location,
      commitment.location,
      "/studios/general",
      "/u/alice",
      "/u/alice/settings",
      "/subagents/deepagent",
      run.location,
    );
  });
  afterAll(async () => app?.close());

  it("answers 200 in HTML and in markdown, with the text as written in markdown", async () => {
    for (const path of pages) {
      const html = await browser.get(path);
      expect(html.statusCode, path).toBe(200);
      expect(html.body, path).toContain("deep @bob");
      const markdown = await md(app, w, w.alice, "GET", path);
      expect(markdown.statusCode, path).toBe(200);
      expect(markdown.body).toMatch(/^## Actions$/m);
    }
    const note = await md(app, w, w.alice, "GET", pages[0]!);
    expect(note.body).toContain(`> ${">".repeat(2000)} deep @bob`);
  });

  it("reads fine as an agent: its identity and scratchpad on /whoami, and every page", async () => {
    const db = testPrisma();
    const tenant = await db.tenant.findUniqueOrThrow({ where: { id: w.tenant.id } });
    const ctx: Ctx = {
      db,
      tenant,
      actor: (await db.user.findUniqueOrThrow({ where: { id: agent.id } })) as Actor,
    };
    const whoami = await readPage(ctx, "/whoami");
    expect(whoami.status).toBe(200);
    expect(whoami.markdown.match(/deep @bob/g)).toHaveLength(2);
    expect(whoami.actions).toContain("update_scratchpad");
    const note = await readPage(ctx, pages[0]!);
    expect(note.status).toBe(200);
    expect(note.actions).toContain("add_comment");
    const html = await app.inject({
      method: "GET",
      url: "/whoami",
      headers: { host: w.host, authorization: `Bearer ${agent.token}` },
    });
    expect(html.statusCode).toBe(200);
  });
});
