// Message content in traces, which an operator turns on
// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT): prompts, replies and tool arguments
// are exported masked exactly as they were for the model. The leak test of
// agent-secrets.test.ts, on what the collector receives: a note, a task and an identity prompt
// holding our token and provider keys, and not one of them in any byte the receiver got.
// And off means off: only lib/telemetry.ts loads the SDK, and only by a dynamic import.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatRequest, FakeReply } from "../src/dev/fake-llm.ts";
import { flushTracing, startTracing, stopTracing } from "../src/lib/telemetry.ts";
import { mdEscape } from "../src/services/registry/markdown.ts";
import { userPrompt } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { act, buildTestApp, makeWorld, md, waitFor } from "./helpers/app.ts";
import { type OtlpReceiver, startReceiver } from "./helpers/otlp-receiver.ts";

let app: FastifyInstance;
let env: AgentEnv;
let rx: OtlpReceiver;
beforeAll(async () => {
  rx = await startReceiver();
  await startTracing({
    endpoint: rx.url,
    serviceName: "cadre-test",
    captureContent: true,
    scheduledDelayMs: 50,
  });
  app = await buildTestApp();
  env = await startAgents("traces-content");
});
afterAll(async () => {
  await env.close();
  await app.close();
  await stopTracing();
  await rx.stop();
});

const hex = (n: number) => randomBytes(n).toString("hex");

/** Opens `path`, comments quoting its note (a tool call's arguments), then finishes quoting it too. */
const echoScript =
  (path: string) =>
  (req: ChatRequest): FakeReply => {
    const prompt = userPrompt(req);
    if (/# Current page: (\S+)/.exec(prompt)?.[1] !== path) return tool("navigate", { path });
    const quoted = prompt.split("\n").filter((l) => l.startsWith("> Deploy"));
    if (!prompt.includes("execute add_comment("))
      return tool("execute_action", {
        action: "add_comment",
        params: { text: `Quoting: ${quoted.join(" ")}` },
      });
    return tool("finish", { message: `The note says:\n${quoted.join("\n")}` });
  };

describe("message content in traces", () => {
  it("exported only masked: no secret in any byte the collector received", async () => {
    const w = await makeWorld();
    const openai = `sk-proj-${hex(24)}`;
    const anthropic = `sk-ant-api03-${hex(30)}`;
    const github = `ghp_${hex(18)}`;
    const scout = await makeAgent(w, w.alice, "scout", {
      identity_prompt: `You help the team. The CI token is ${github}.`,
    });
    const note = await act(w, w.alice, "/studios/general", "create_note", {
      title: "Deploy",
      text: `Deploy with ${w.alice.token} and call the model with ${openai}.`,
    });
    env.llm.setScript(echoScript(note.location));
    const res = await md(app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", {
      task: `Read the deploy note. The Anthropic key is ${anthropic}.`,
    });
    const runId = String(res.headers.location).split("/").pop()!;
    expect((await waitForRun(scout.id)).status).toBe("completed");
    const spans = await waitFor(async () => {
      await flushTracing();
      const mine = rx.spans.filter((s) => s.attributes["cadre.run.id"] === runId);
      return mine.length ? rx.spans.filter((s) => s.traceId === mine[0]!.traceId) : null;
    }, 10_000);

    const secrets = [w.alice.token, openai, anthropic, github].flatMap((s) => [
      s,
      mdEscape(s),
      JSON.stringify(s),
    ]);
    for (const body of rx.bodies)
      for (const s of secrets) expect(body.includes(s), `an export holds ${s.slice(0, 12)}…`).toBe(false);

    const chats = spans.filter((s) => s.name.startsWith("chat "));
    expect(chats.length).toBeGreaterThanOrEqual(3);
    const input = String(chats[0]!.attributes["gen_ai.input.messages"]);
    expect(input).toContain("The CI token is [masked: GitHub token].");
    expect(input).toContain("The Anthropic key is [masked: Anthropic key].");
    const last = String(chats.at(-1)!.attributes["gen_ai.output.messages"]);
    expect(last).toContain("[masked: OpenAI key]");
    const comment = spans.find((s) => s.name === "execute_tool add_comment");
    expect(String(comment?.attributes["gen_ai.tool.call.arguments"])).toContain("[masked: cadre token]");
  });
});

describe("tracing off", () => {
  it("only lib/telemetry.ts names the SDK, and only in dynamic imports", () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? (e.name === "generated" ? [] : files(join(dir, e.name))) : [join(dir, e.name)],
      );
    const sdk = /@opentelemetry\/(?!api")[\w-]+/;
    const naming = files("src").filter((f) => f.endsWith(".ts") && sdk.test(readFileSync(f, "utf8")));
    expect(naming).toEqual([join("src", "lib", "telemetry.ts")]);
    const telemetry = readFileSync(join("src", "lib", "telemetry.ts"), "utf8");
    const statics = telemetry.match(/^import[^;]*from "@opentelemetry\/[\w-]+";/gm) ?? [];
    expect(statics.join("\n")).not.toMatch(sdk);
    expect(telemetry).toContain('import("@opentelemetry/sdk-trace-base")');
  });
});
