// The navigator's typed tools: the current page's actions as function tools with the
// registry's JSON Schema, within their share of the prompt budget; the model's typed calls
// read as the same decisions the untyped execute_action made.
import { encode as cl100k } from "gpt-tokenizer/encoding/cl100k_base";
import { encode as o200k } from "gpt-tokenizer/encoding/o200k_base";
import type { ChatCompletionTool } from "openai/resources/chat/completions";
import { describe, expect, it } from "vitest";
import { toolActions } from "../src/services/agents/prompt/prompt.ts";
import { parseDecision, TOOLS, toolsFor, toolTokens } from "../src/services/agents/prompt/protocol.ts";
import { registry } from "../src/services/catalog/catalog.ts";
import { paramsJsonSchema } from "../src/services/registry/json-schema.ts";

const action = (name: string) => registry.actions.get(name)!;
const fn = (t: ChatCompletionTool) => (t.type === "function" ? t.function : { name: "", parameters: {} });
const names = (tools: ChatCompletionTool[]) => tools.map((t) => fn(t).name);
const called = (name: string, args: unknown) => ({
  content: null,
  tool_calls: [{ id: "c1", type: "function" as const, function: { name, arguments: JSON.stringify(args) } }],
});

/** A page as the registry writes it: its actions' signatures, then the HTTP how-to. */
const NOTE_PAGE = [
  "# Note",
  "Text",
  "## Actions",
  "- `add_comment` (text: string) — Comment here",
  "- `confirm_read` () — Say you read it",
  "_Describe one with `GET /x/actions/<name>`; run it with `POST /x/actions/<name>`._",
].join("\n\n");

describe("typed tools", () => {
  it("offers the fixed tools and each usable action with its registry schema", () => {
    const tools = toolsFor([action("add_comment"), action("confirm_read")]);
    expect(names(tools)).toEqual(["navigate", "finish", "ask_owner", "add_comment", "confirm_read"]);
    const comment = fn(tools[3]!) as { description?: string; parameters?: object };
    expect(comment.description).toContain(action("add_comment").description);
    // The registry's schema as a model needs it: no regexes, no "at least 1 character", no
    // limit of thousands (validation still answers each); a short limit stays.
    const { text, reply_to } = paramsJsonSchema(action("add_comment")).properties as Record<string, object>;
    expect(text).toMatchObject({ minLength: 1, maxLength: 10_000 });
    expect(reply_to).toHaveProperty("pattern");
    const typedParams = (comment.parameters as { properties: { params: unknown } }).properties.params;
    expect(typedParams).toEqual({
      type: "object",
      properties: {
        text: { type: "string", description: "markdown; @handle mentions someone" },
        reply_to: { type: "string", description: "id of the comment you are replying to" },
      },
      required: ["text"],
    });
    const title = (
      fn(toolsFor([action("create_note")])[3]!).parameters as {
        properties: { params: { properties: { title: object } } };
      }
    ).properties.params.properties.title;
    expect(title).toEqual({ type: "string", maxLength: 200 });
    // Only JSON Schema's words: the registry's form hints stay home.
    expect(JSON.stringify(paramsJsonSchema(action("add_comment")))).not.toContain("multiline");
  });

  it("types actions in page order while they fit their share; the rest go through execute_action", () => {
    const page = ["create_note", "create_decision", "create_commitment", "subscribe"].map(action);
    const all = toolsFor(page);
    const tight = toolsFor(page, toolTokens(all) - 1);
    expect(names(tight).at(-1)).toBe("execute_action");
    expect(toolTokens(tight)).toBeLessThan(toolTokens(all));
    expect(names(toolsFor(page, toolTokens(TOOLS)))).toEqual([...names(TOOLS), "execute_action"]);
  });

  it("counts no tool's tokens lower than o200k or cl100k do, for every action the registry has", () => {
    for (const t of [...TOOLS, ...toolsFor([...registry.actions.values()])]) {
      const json = JSON.stringify(t);
      expect(toolTokens([t]), fn(t).name).toBeGreaterThanOrEqual(
        Math.max(o200k(json).length, cl100k(json).length),
      );
    }
  });

  it("reads a typed call as an execute decision, params nested or sent flat", () => {
    const page = ["add_comment"];
    const nested = parseDecision(
      called("add_comment", { params: { text: "hi" }, reason: "r", note: "n" }),
      page,
    );
    expect(nested).toEqual({
      ok: true,
      decision: { type: "execute", action: "add_comment", params: { text: "hi" }, reason: "r", note: "n" },
    });
    const flat = parseDecision(called("add_comment", { text: "hi", note: "n" }), page);
    expect(flat).toMatchObject({
      ok: true,
      decision: { action: "add_comment", params: { text: "hi" }, note: "n" },
    });
    // An action the page does not offer is not a tool, and says what is.
    const other = parseDecision(called("create_note", { params: {} }), page);
    expect(other).toEqual({ ok: false, error: expect.stringContaining("(add_comment)") });
    // The untyped tool still works.
    const untyped = parseDecision(
      called("execute_action", { action: "add_comment", params: { text: "x" } }),
      page,
    );
    expect(untyped).toMatchObject({ ok: true, decision: { type: "execute", action: "add_comment" } });
  });

  it("a page in the prompt names its typed actions instead of repeating their signatures", () => {
    const typed = toolsFor([action("add_comment")]);
    expect(toolActions(NOTE_PAGE, typed)).toBe(
      "# Note\n\nText\n\n## Actions\n\nEach is one of your tools: `add_comment`.\n\nThrough execute_action:\n- `confirm_read` () — Say you read it\n",
    );
    expect(toolActions(NOTE_PAGE, undefined)).toBe(NOTE_PAGE);
  });
});
