// A run's trace in the OpenTelemetry GenAI conventions, when tracing is on (lib/telemetry.ts):
// an `invoke_agent` span per job of the run, a `chat` span per model call and an
// `execute_tool` span per navigation or action under it. Off, the navigator gets NO_TRACE,
// whose calls do nothing.
//
// A run outlives its jobs: it waits days for an approval or an answer, and a span cannot stay
// open across jobs or processes. So the run's first job starts its trace (a new one, linked
// to the request or event job that queued it, whose context the run's row keeps) and stores
// its own span's context on the row; every later job's `invoke_agent` is a child of that
// first one. One trace per run, the trigger one click away, each resumption visible as such.
//
// What leaves: ids, names, models, counts, the policy's decision. Prompts, replies and tool
// arguments only when an operator turns content capture on, and then masked as they are for
// the model (secret-masking.ts); never an error's message (a provider may quote a key).
import {
  type Attributes,
  type Context,
  type Link,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import type { PrismaClient } from "../../../db/prisma.ts";
import {
  captureContent,
  contextFrom,
  spanContextOf,
  traceparentOf,
  tracer,
  tracingOn,
} from "../../../lib/telemetry.ts";
import type { Endpoint } from "../../money/keys.ts";
import { priceCall } from "../../money/pricing.ts";
import type { RunStart } from "../core/run-start.ts";
import type { Finish } from "../core/runs.ts";
import { maskDeep, maskText } from "../core/secret-masking.ts";
import { type AgentConfig, tenantSettings } from "../core/settings.ts";
import { decide } from "../policy/policy.ts";
import type { Decision } from "../prompt/protocol.ts";
import type { EncodedPrompt, LlmResponse } from "./llm.ts";
import { callSpans } from "./traced-fetch.ts";

/** A recorded step, as the navigator remembers it. */
interface Recorded {
  type: string;
  path?: string | null;
  detail?: unknown;
}

export interface RunTrace {
  /** `call` under a `chat` span (traced-fetch.ts adds its failed attempts to it). */
  chat(
    model: string,
    endpoint: Endpoint,
    prompt: EncodedPrompt,
    call: () => Promise<LlmResponse>,
  ): Promise<LlmResponse>;
  /** The model decided `decision`: a navigation or an action opens its `execute_tool` span. `cfg`: the configuration the action is judged by (policy.ts judgedConfig). */
  tool(decision: Decision, cfg: Pick<AgentConfig, "rules" | "requires_approval">): void;
  /** A step was recorded: it ends the open `execute_tool` span with what came of it. */
  recorded(step: Recorded): void;
  end(fin: Finish): void;
}

export const NO_TRACE: RunTrace = {
  chat: (_m, _e, _p, call) => call(),
  tool: () => undefined,
  recorded: () => undefined,
  end: () => undefined,
};

const PROVIDERS: [RegExp, string][] = [
  [/(^|\.)openai\.com$/, "openai"],
  [/(^|\.)anthropic\.com$/, "anthropic"],
];

/** gen_ai.provider.name: a provider we know by its host; any other endpoint speaks OpenAI's protocol. */
function providerOf(endpoint: Endpoint): string {
  if (endpoint.provider === "anthropic") return "anthropic";
  const host = URL.canParse(endpoint.baseURL) ? new URL(endpoint.baseURL).hostname : "";
  return PROVIDERS.find(([re]) => re.test(host))?.[1] ?? "openai_compatible";
}

/** The span of one job of the run; NO_TRACE when tracing is off. */
export function startRunTrace(
  prisma: PrismaClient,
  start: RunStart,
  /** The job's own traceparent, when the job is this run's: what woke it again (an approval's request). */
  jobTraceparent?: string,
): RunTrace {
  if (!tracingOn()) return NO_TRACE;
  const { run, agent, tenant } = start;
  const links: Link[] = [];
  const first = !run.traceparent;
  for (const traceparent of [first ? run.triggerTraceparent : undefined, jobTraceparent]) {
    const spanContext = spanContextOf(traceparent);
    if (spanContext && !links.some((l) => l.context.spanId === spanContext.spanId))
      links.push({ context: spanContext });
  }
  const span = tracer().startSpan(
    `invoke_agent ${agent.handle}`,
    {
      kind: SpanKind.INTERNAL,
      links,
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent.handle,
        "gen_ai.agent.id": agent.id,
        "gen_ai.conversation.id": run.id,
        "cadre.run.id": run.id,
        "cadre.run.trigger": run.triggerKind,
        "cadre.tenant.id": tenant.id,
        ...(run.model && { "gen_ai.request.model": run.model }),
        ...(!first && { "cadre.run.resumed_at_step": run.stepsCount }),
      },
    },
    contextFrom(run.traceparent),
  );
  if (first) {
    // Not awaited, and never failing the run: a lost write only leaves later jobs their own traces.
    const traceparent = traceparentOf(span.spanContext());
    prisma.$executeRaw`UPDATE subagent_task_runs SET traceparent = ${traceparent} WHERE id = ${run.id} AND traceparent IS NULL`.catch(
      () => undefined,
    );
  } else span.addEvent("cadre.run.resumed", { "cadre.run.steps": run.stepsCount });
  return new SpanRunTrace(span, tenantSettings(tenant).pricing);
}

class SpanRunTrace implements RunTrace {
  private readonly ctx: Context;
  private open: {
    span: Span;
    decided: Extract<Decision, { type: "navigate" | "execute" }>;
    cfg: Pick<AgentConfig, "rules" | "requires_approval">;
  } | null = null;

  constructor(
    private readonly span: Span,
    private readonly prices: Parameters<typeof priceCall>[2],
  ) {
    this.ctx = trace.setSpan(contextFrom(undefined), span);
  }

  async chat(model: string, endpoint: Endpoint, prompt: EncodedPrompt, call: () => Promise<LlmResponse>) {
    const span = tracer().startSpan(
      `chat ${model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": providerOf(endpoint),
          "gen_ai.request.model": model,
          ...(captureContent() && { "gen_ai.input.messages": inputMessages(prompt) }),
        },
      },
      this.ctx,
    );
    callSpans.set(prompt.body, span);
    try {
      const reply = await call();
      const { usage } = reply;
      span.setAttributes({
        "gen_ai.response.model": reply.responseModel ?? model,
        "gen_ai.usage.input_tokens": usage.input,
        "gen_ai.usage.output_tokens": usage.output,
        "gen_ai.usage.cache_read.input_tokens": usage.cached,
        // Cache writes (Anthropic, OpenAI from GPT-5.6 on); like reads, inside input_tokens, as the convention asks.
        "gen_ai.usage.cache_creation.input_tokens": usage.cacheWrite ?? 0,
        "cadre.usage.cost_usd": priceCall(model, usage, this.prices).costMicros / 1e6,
        ...(reply.finishReason && { "gen_ai.response.finish_reasons": [reply.finishReason] }),
        ...(captureContent() && { "gen_ai.output.messages": JSON.stringify(maskDeep([reply.message])) }),
      });
      return reply;
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute("error.type", (err as { kind?: string }).kind ?? (err as Error)?.name ?? "Error");
      throw err;
    } finally {
      callSpans.delete(prompt.body);
      span.end();
    }
  }

  tool(decided: Decision, cfg: Pick<AgentConfig, "rules" | "requires_approval">) {
    this.closeOpen();
    if (decided.type !== "navigate" && decided.type !== "execute") return;
    const name = decided.type === "navigate" ? "navigate" : decided.action;
    const attributes: Attributes = {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": name,
      "gen_ai.tool.type": "function",
    };
    if (captureContent())
      attributes["gen_ai.tool.call.arguments"] = JSON.stringify(
        maskDeep(decided.type === "navigate" ? { path: decided.path } : decided.params),
      );
    const span = tracer().startSpan(
      `execute_tool ${name}`,
      { kind: SpanKind.INTERNAL, attributes },
      this.ctx,
    );
    // Only an action is judged by the policy: its config parsed once per version of it.
    this.open = { span, decided, cfg: decided.type === "execute" ? cfg : EMPTY_RULES };
  }

  recorded(step: Recorded) {
    const open = this.open;
    if (!open || (step.type !== "navigate" && step.type !== "execute")) return;
    this.open = null;
    const detail = (step.detail ?? {}) as {
      ok?: boolean;
      status?: number;
      pending?: string;
      server?: string;
    };
    const { span, decided } = open;
    span.setAttributes({
      "cadre.tool.ok": detail.ok !== false,
      ...(step.path && { "cadre.page.path": step.path }),
      ...(detail.status !== undefined && { "cadre.tool.status": detail.status }),
      // A connected tool's call: the server its arguments went to (host[:port]), as MCP's conventions name it.
      ...(detail.server && serverAttributes(detail.server)),
    });
    if (decided.type === "execute") {
      const { decision, rule } = policyOf(open.cfg, decided, detail);
      span.setAttributes({
        "cadre.policy.decision": decision,
        ...(rule && { "cadre.policy.rule": maskText(rule) }),
      });
      if (detail.pending)
        span.addEvent("cadre.approval.requested", {
          "cadre.approval.id": detail.pending,
          "cadre.policy.rule": maskText(rule ?? ""),
        });
    }
    if (detail.ok === false) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }

  end(fin: Finish) {
    this.closeOpen();
    this.span.setAttributes({
      "cadre.run.outcome": fin.status,
      ...(fin.stopReason && { "cadre.run.stop_reason": fin.stopReason }),
    });
    // A wait is where this job ends and a person's turn begins: the next job resumes the trace.
    if (fin.status === "waiting")
      this.span.addEvent(fin.stopReason === "awaiting_approval" ? "cadre.approval.wait" : "cadre.run.wait", {
        "cadre.run.stop_reason": fin.stopReason ?? "",
      });
    if (fin.status === "failed" || fin.status === "timed_out")
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.span.end();
  }

  /** A decision that recorded no step (the run ended, a crash): its span ends as it is. */
  private closeOpen() {
    this.open?.span.end();
    this.open = null;
  }
}

const EMPTY_RULES: Pick<AgentConfig, "rules" | "requires_approval"> = { rules: [], requires_approval: [] };

/** `server.address` and `server.port` of a host[:port], and the tool's type: a tool of a server, not of ours. */
function serverAttributes(host: string): Attributes {
  const [address, port] = host.startsWith("[")
    ? [host.slice(0, host.indexOf("]") + 1), host.split("]:")[1]]
    : host.split(":");
  return {
    "server.address": address ?? host,
    ...(port && { "server.port": Number(port) }),
    "gen_ai.tool.type": "extension",
    "mcp.method.name": "tools/call",
  };
}

/** Which way the policy went for an action, and by which rule (policy.ts decide, as the registry applied it). */
function policyOf(
  cfg: Pick<AgentConfig, "rules" | "requires_approval">,
  executed: Extract<Decision, { type: "execute" }>,
  detail: { ok?: boolean; status?: number; pending?: string },
): { decision: string; rule?: string } {
  const verdict = decide(cfg, executed.action, executed.params ?? {});
  // A disclosure outside the run's label waits whatever the rules say (policy/labels.ts).
  if (detail.pending)
    return { decision: "approve", rule: verdict.kind === "approve" ? verdict.rule : "disclosure" };
  if (detail.ok !== false) return { decision: "allow", rule: verdict.rule ?? "default" };
  if (detail.status === 403)
    return { decision: "deny", rule: verdict.kind === "deny" ? verdict.rule : "capability" };
  return { decision: "allow", rule: verdict.rule ?? "default" };
}

/** The messages as sent: encodePrompt masked them already. Anthropic's body has its system prompt beside them. */
function inputMessages(prompt: EncodedPrompt): string {
  const body = JSON.parse(prompt.body.toString("utf8")) as { messages: unknown[]; system?: unknown };
  return JSON.stringify(
    body.system ? [{ role: "system", content: body.system }, ...body.messages] : body.messages,
  );
}
