// The prompt budget is only as good as its count: the estimate must never count fewer
// tokens than the real tokenizers do, on adversarial text and on the pages Cadre renders,
// and a prompt built within a budget must fit it as the real tokenizers count it.
import { encode as cl100k } from "gpt-tokenizer/encoding/cl100k_base";
import { encode as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import type { Remembered } from "../src/services/agents/prompt/memory.ts";
import { buildMessages, fitPage, TOOL_TOKENS } from "../src/services/agents/prompt/prompt.ts";
import { JSON_MODE_INSTRUCTIONS, TOOLS } from "../src/services/agents/prompt/protocol.ts";
import { estimateTokens, prefixWithin } from "../src/services/agents/prompt/token-estimate.ts";
import { readPage } from "../src/services/catalog/markdown-api.ts";
import { makeAgent } from "./helpers/agents.ts";
import { act, makeWorld, testPrisma } from "./helpers/app.ts";

const real = (text: string) => Math.max(o200k(text).length, cl100k(text).length);
const random = (n: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(n)));

const SAMPLES: Record<string, string> = {
  "English prose":
    "The offsite is in Lisbon on the third week of March. Everyone books their own flights, and we reimburse up to 400 euros. ".repeat(
      20,
    ),
  ids: Array.from({ length: 200 }, () => newId()).join(" "),
  "links with ids": Array.from(
    { length: 100 },
    () => `- [Note](/studios/general/notes/${newId()}) by @alice — 2026-11-25 10:00`,
  ).join("\n"),
  JSON: JSON.stringify(
    Array.from({ length: 50 }, (_, i) => ({ id: newId(), n: i, text: "hello", ok: true })),
  ),
  digits: Array.from({ length: 300 }, () => String(Math.random()).slice(2)).join(","),
  UUIDs: Array.from({ length: 100 }, () => crypto.randomUUID()).join(" "),
  base64: random(3000).toString("base64"),
  "hex letters": Array.from({ length: 300 }, () => random(8).toString("hex").replace(/\d/g, "")).join(" "),
  "random lowercase": Array.from({ length: 300 }, () =>
    Math.random().toString(36).slice(2, 10).replace(/\d/g, ""),
  ).join(" "),
  punctuation: "!@#$%^&*()_+{}|:<>?~`-=[]\\;',./ ".repeat(50),
  whitespace: "a          b\n\n\n\n   c\t\t\td ".repeat(100),
  "upper case": "THE OFFSITE IS IN LISBON ON THE THIRD WEEK OF MARCH ".repeat(30),
  camelCase: "getElementById addEventListener XMLHttpRequest ".repeat(40),
  Chinese: "会议将于三月第三周在里斯本举行。大家应该自己预订航班。".repeat(30),
  emoji: "🎉🚀👍🏽❤️‍🔥 ".repeat(100),
  Russian: "Встреча пройдет в Лиссабоне на третьей неделе марта. ".repeat(30),
  Arabic: "سيعقد الاجتماع في لشبونة في الأسبوع الثالث من مارس. ".repeat(30),
  Hindi: "बैठक मार्च के तीसरे सप्ताह में लिस्बन में होगी। ".repeat(30),
};

describe("the token estimate", () => {
  it.each(Object.entries(SAMPLES))("never counts fewer than o200k or cl100k: %s", (_, text) => {
    expect(estimateTokens(text)).toBeGreaterThanOrEqual(real(text));
  });

  it("counts English prose at most twice over, so a budget is not mostly waste", () => {
    const prose = SAMPLES["English prose"]!;
    expect(estimateTokens(prose)).toBeLessThanOrEqual(2 * real(prose));
  });

  it("never counts fewer on the pages an agent reads", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout");
    for (const text of Object.values(SAMPLES).map((s) => s.slice(0, 1500)))
      await act(w, w.alice, "/studios/general", "create_note", { title: "Sample", text });
    const db = testPrisma();
    const tenant = await db.tenant.findUniqueOrThrow({ where: { id: w.tenant.id } });
    const actor = await db.user.findUniqueOrThrow({ where: { id: scout.id } });
    const notes = await db.note.findMany({ where: { tenantId: w.tenant.id } });
    const paths = ["/whoami", "/studios/general", "/studios/general/notes", "/search?q=Sample"];
    paths.push(...notes.map((n) => `/studios/general/notes/${n.id}`));
    for (const path of paths) {
      const page = await readPage({ db, tenant, actor: actor as never }, path);
      expect(page.status, path).toBe(200);
      expect(estimateTokens(page.markdown), path).toBeGreaterThanOrEqual(real(page.markdown));
    }
  });

  it("counts the tool schemas generously, as providers frame them", () => {
    expect(TOOL_TOKENS).toBeGreaterThanOrEqual(1.5 * real(JSON.stringify(TOOLS)));
    expect(estimateTokens(JSON_MODE_INSTRUCTIONS)).toBeGreaterThanOrEqual(real(JSON_MODE_INSTRUCTIONS));
  });

  it("cuts a text to a budget without splitting a character", () => {
    const text = SAMPLES.emoji!;
    for (const t of [7, 50, 333]) {
      const cut = prefixWithin(text, t);
      expect(estimateTokens(cut)).toBeLessThanOrEqual(t);
      expect(cut.length).toBeGreaterThan(0);
      expect(Buffer.from(cut).toString()).toBe(cut); // no lone surrogate
    }
    expect(prefixWithin(text, 0)).toBe("");
    expect(prefixWithin("short", 100)).toBe("short");
  });
});

/** Every token a request sends: its messages and its tools, counted by both tokenizers. */
function requestTokens(messages: ReturnType<typeof buildMessages>, jsonMode: boolean) {
  const text = messages.map((m) => String(m.content)).join("\n");
  return real(text) + (jsonMode ? real(JSON_MODE_INSTRUCTIONS) : real(JSON.stringify(TOOLS)));
}

describe("a prompt built within a budget", () => {
  const bigPage = (title: string, body = Object.values(SAMPLES).join("\n\n")) =>
    `# ${title}\n\n${body}\n\n## Actions\n\n- \`add_comment(text)\` — Add a comment`;
  // A long run at its worst: every step read a big page and left a long note.
  const steps: Remembered[] = Array.from({ length: 150 }, (_, i) => ({
    number: i + 1,
    type: "navigate",
    path: `/studios/general/notes/n${i}`,
    detail: {
      ok: true,
      resultPath: `/studios/general/notes/n${i}`,
      page: fitPage(bigPage(`Note ${i}`), Infinity),
      note: `Step ${i}: ${SAMPLES.ids!.slice(0, 380)}`,
    },
  }));
  const worst = (budget: number, jsonMode: boolean) => ({
    agent: { name: "Scout", handle: "scout", identityPrompt: SAMPLES.base64!.repeat(3) },
    owner: "your owner, Alice (@alice)",
    workspace: "Acme",
    task: SAMPLES["links with ids"]!,
    steps,
    page: { path: "/studios/general", markdown: bigPage("General") },
    feedback: SAMPLES.JSON,
    stepsLeft: 3,
    budget,
    jsonMode,
  });

  it.each([
    [2_000, false],
    [2_000, true],
    [6_000, false],
    [6_000, true],
    [20_000, false],
  ])(
    "of %i tokens (JSON mode: %s) fits it as real tokenizers count, whatever its parts' sizes",
    (budget, json) => {
      const messages = buildMessages(worst(budget, json));
      expect(requestTokens(messages, json)).toBeLessThanOrEqual(budget);
      const user = String(messages[1]!.content);
      expect(user).toContain("# Task");
      expect(user).toContain("# Current page: /studios/general — the last page above");
    },
  );

  it("of the default size keeps each part of a long run: the page's actions, the last steps, notes, the last pages whole, excerpts", () => {
    const prose = SAMPLES["English prose"]!;
    const run = steps.map((s, i) => ({
      ...s,
      detail: {
        ...(s.detail as object),
        page: bigPage(`Note ${i}`, prose),
        note: i === 3 ? "The code word is LISBON." : i % 10 ? undefined : `Checked ${i} notes.`,
      },
    }));
    const messages = buildMessages({
      ...worst(6_000, false),
      agent: { name: "Scout", handle: "scout", identityPrompt: "You help the team." },
      task: "Summarise the notes.",
      feedback: undefined,
      steps: run,
      page: { path: "/studios/general", markdown: bigPage("General", prose.repeat(4)) },
    });
    expect(requestTokens(messages, false)).toBeLessThanOrEqual(6_000);
    const user = String(messages[1]!.content);
    expect(user).toContain("- `add_comment(text)`"); // the current page's actions survive its cut
    expect(user).toContain("[… page truncated");
    expect(user).toContain("150. navigate /studios/general/notes/n149");
    expect(user).toContain(
      "4. navigate /studios/general/notes/n3 — ok\n   your note: The code word is LISBON.",
    );
    expect(user).toContain("steps without a note not shown");
    // The newest read whole where it was read, and older ones' excerpts with the steps that read them.
    expect(user).toContain("150. navigate /studios/general/notes/n149 — ok\n<page>\n# Note 149\n");
    expect(user).toMatch(
      /\n\d+\. navigate \/studios\/general\/notes\/n\d+ — ok\n {3}excerpt: Note \d+ — The offsite is in Lisbon/,
    );
  });

  it("grows with the run until the budget, then stays there", () => {
    const prose = SAMPLES["English prose"]!.slice(0, 1200);
    const run: Remembered[] = steps.map((s, i) => ({
      ...s,
      detail: {
        ...(s.detail as object),
        page: bigPage(`Note ${i}`, prose),
        note: `Note ${i} says ${prose.slice(0, 150)}`,
      },
    }));
    // Records with no `logFrom` (as a run kept before it) start their pages at the first,
    // which do not fit: each prompt holds the last two whole, and grows by lines alone.
    const sizes = [1, 10, 31, 120, 141].map((n) => {
      const m = buildMessages({
        ...worst(6_000, false),
        agent: { name: "Scout", handle: "scout", identityPrompt: "You help the team." },
        task: "Summarise the notes.",
        feedback: undefined,
        steps: run.slice(0, n),
        page: { path: "/studios/general", markdown: bigPage("General", prose) },
      });
      return requestTokens(m, false);
    });
    for (const s of sizes) expect(s).toBeLessThanOrEqual(6_000);
    expect(sizes[1]!).toBeGreaterThan(sizes[0]!);
    expect(sizes[2]!).toBeGreaterThan(sizes[1]!);
    // Once the notes fill their share, the oldest leave a chunk at a time: no more growth
    // than a chunk's worth (memory-log.ts, page-log.ts).
    expect(Math.abs(sizes[4]! - sizes[3]!)).toBeLessThan(0.1 * sizes[3]!);
  });
});
