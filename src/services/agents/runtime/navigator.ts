// The AgentNavigator: starts at /whoami and loops — prompt, LLM, act through the
// internal markdown API, record — until `finish`, a limit, a stop request or a fatal
// error. Each step is recorded before the next begins, so a recovered run resumes
// where it was and never repeats an action; the prompt is rebuilt from the recorded
// steps (memory.ts), so a resumed run remembers what it would have without the break.

import { DEFAULT_PROMPT_BUDGET } from "../../../config.ts";
import { hotQuery, type PrismaClient } from "../../../db/prisma.ts";
import { Prisma } from "../../../generated/prisma/client.ts";
import type { Logger } from "../../../lib/logger.ts";
import { runSteps } from "../../../metrics/metrics.ts";
import { registry } from "../../catalog/catalog.ts";
import { type MarkdownPage, readPage, runAction } from "../../catalog/markdown-api.ts";
import { callStarted } from "../../live/publish.ts";
import type { TextPublisher } from "../../live/text.ts";
import { type Endpoint, markKeyFailed } from "../../money/keys.ts";
import { type Budget, budgetAtStart, recordUsage, type UsageEntry } from "../../money/ledger.ts";
import { priceCall, type Usage } from "../../money/pricing.ts";
import { type ActionDef, type Ctx, toActor } from "../../registry/types.ts";
import type { RunStart } from "../core/run-start.ts";
import type { Finish } from "../core/runs.ts";
import { maskText } from "../core/secret-masking.ts";
import { tenantSettings } from "../core/settings.ts";
import {
  LeaseLostError,
  type PromptFacts,
  recordResources,
  recordStep,
  type StepRecord,
} from "../core/steps.ts";
import { ownerText } from "../core/whoami-read.ts";
import { runActions } from "../policy/capabilities.ts";
import { storedFlow } from "../policy/labels.ts";
import { judgedConfig } from "../policy/policy.ts";
import { compact, lastPath, type Remembered } from "../prompt/memory.ts";
import { buildPrompt, capPage } from "../prompt/prompt.ts";
import { type Decision, parseDecision } from "../prompt/protocol.ts";
import { CONVERSATION, promptInput, toolsHash } from "../prompt/step-prompt.ts";
import { unrunCalls } from "../prompt/tool-calls.ts";
import { ModelChain } from "./fallback.ts";
import type { StopReason } from "./heartbeat.ts";
import {
  apiOf,
  type EncodedPrompt,
  encodePrompt,
  type LlmClient,
  LlmError,
  type LlmResponse,
} from "./llm.ts";
import { limitReached, type Prepared, prepare, timedOut } from "./navigator-setup.ts";
import { PAUSED, pauseAsked } from "./pause.ts";
import { NO_TRACE, type RunTrace } from "./tracing.ts";

export const MAX_INVALID_IN_A_ROW = 3;

export interface NavigatorDeps {
  prisma: PrismaClient;
  llm: LlmClient;
  /** The shared endpoint (operator's proxy); null when none is configured. */
  endpoint: Endpoint | null;
  defaultModel?: string;
  /** The most prompt tokens a step may send (PROMPT_TOKEN_BUDGET). */
  promptBudget?: number;
  /** The worker's lease id, required to advance the run. */
  owner: string;
  /** The run's own logger: its lines carry the run, agent and tenant (process-agent-run.ts). */
  log?: Logger;
  /** Fired when its owner asks it to pause: it does before its next model call (pause.ts). */
  pause?: AbortSignal;
  /** Where the model's reply goes as it streams, for the run page (services/live/text.ts). */
  text?: TextPublisher;
  /** This job's spans of the run (tracing.ts); none when tracing is off. */
  trace?: RunTrace;
}

const excerpt = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…` : s);

export function stopped(reason: unknown): Finish {
  if (reason === "stopped")
    return { status: "cancelled", stopReason: "stopped_by_owner", error: "Stopped by its owner." };
  if (reason === "lease_lost") return { status: "failed", stopReason: "lease_lost" };
  return { status: "failed", stopReason: "shutdown", error: "The worker shut down." };
}

/** What carries over when a run resumes in the same worker after a transient failure. */
export interface Resumable {
  /** Date.now() by which the run ends: set by the first attempt, kept by the later ones. */
  deadline?: number;
}

export async function runNavigator(
  deps: NavigatorDeps,
  start: RunStart,
  signal: AbortSignal,
  resumable: Resumable = {},
): Promise<Finish> {
  const inFlight: Promise<unknown>[] = [];
  try {
    const prepared = await prepare(deps.prisma, start, deps.endpoint, deps.defaultModel);
    if ("status" in prepared) return prepared;
    return await new Navigation(deps, start, prepared, signal, inFlight, resumable).run();
  } finally {
    // A run never ends ahead of a record it started: its end would race the record's lease check.
    await Promise.allSettled(inFlight);
  }
}

type Step = Omit<StepRecord, "number">;

/** One LLM call and what it is recorded with. */
interface Turn {
  reply: LlmResponse;
  spent: UsageEntry;
  t0: number;
  /** How its prompt was made, but for the fingerprint the reply carries. */
  prompt: Omit<PromptFacts, "hash">;
}

class Navigation {
  private readonly prisma: PrismaClient;
  private readonly run0: RunStart["run"];
  private readonly ctx: Ctx;
  /** The run's steps, oldest first: recorded ones and those this worker adds. */
  private readonly memory: Remembered[];
  private readonly deadline: number;
  /** The tenant's price overrides, parsed once per run. */
  private readonly prices: ReturnType<typeof tenantSettings>["pricing"];
  /** The run's model and endpoint; not the rows it resumed from, which memory holds compacted. */
  private readonly p: Omit<Prepared, "previous">;
  /** A replay's prompt budget, the original's (replay-seed.ts). */
  private promptBudget?: number;
  private budget: Budget;
  private n: number;
  private answers: number;
  private page!: MarkdownPage;
  /** Whether a step row holds `page` (a navigation's): otherwise the next step keeps it, for its prompt. */
  private pageRecorded = false;
  /** How the prompt of the call in flight was made (step-prompt.ts). */
  private prompt: Omit<PromptFacts, "hash"> = { budget: 0 };
  // The first step only records the /whoami read, so the model need not wait for it: it is
  // written while the first call is out, and awaited before that call is charged as step 2.
  private firstStep: Promise<void> = Promise.resolve();
  /** Whether watchers must be told a call started: true unless a row they were notified of just said so (see callModel). */
  private announce: boolean;
  private invalid = 0;
  private feedback: string | undefined;
  private jsonMode = false;
  /** The typed tools the last call offered: a call of one is an execute decision. */
  private typed: string[] = [];
  /** The actions the run may use: its typed tools (capabilities.ts runActions, step-prompt.ts). */
  private readonly usable: ActionDef[];
  /** The agent's model and its fallbacks (fallback.ts). */
  private readonly chain: ModelChain;
  private readonly overtime: AbortSignal;
  private readonly callSignal: AbortSignal;

  constructor(
    private readonly deps: NavigatorDeps,
    private readonly start: RunStart,
    p: Prepared,
    private readonly signal: AbortSignal,
    private readonly inFlight: Promise<unknown>[],
    resumable: Resumable,
  ) {
    this.prisma = deps.prisma;
    this.run0 = start.run;
    this.p = { cfg: p.cfg, model: p.model, endpoint: p.endpoint, seed: p.seed };
    this.chain = new ModelChain(p.model, p.cfg.fallback_models);
    const { run, agent, tenant } = start;
    this.ctx = {
      db: this.prisma,
      tenant,
      actor: toActor(agent),
      run: {
        id: run.id,
        chainDepth: run.chainDepth,
        ...(p.pinnedPolicy !== undefined && { pinnedPolicy: p.pinnedPolicy }),
      },
      // What it read survives a crash or a wait on the run's row: a resumed run starts where it left off.
      // On the pool directly (hotQuery): it is on the step path of every run that reads a new studio.
      flow: storedFlow(run.label, (label) =>
        hotQuery(
          this.prisma,
          Prisma.sql`UPDATE subagent_task_runs SET label = ${JSON.stringify(label)}::jsonb WHERE id = ${run.id}`,
        ),
      ),
      ...(start.viewers.length && { viewers: start.viewers }),
    };
    // Checked before every LLM call, not once per run: the owner may lower the limit or
    // revoke the key meanwhile. Read with the claim; every recorded call returns it as it leaves it.
    this.budget = budgetAtStart(
      agent.agentConfig,
      start.whoami.spentMicros,
      !tenantSettings(tenant).agents_enabled,
    );
    this.prices = tenantSettings(tenant).pricing;
    this.usable = runActions(run, agent, tenant, registry.actions.values());
    // A row's columns and prompt facts are the run page's, not the prompt's: memory keeps the rest.
    this.memory = p.previous.map(({ number, type, path, detail }) => {
      const { prompt: _, ...rest } = (detail ?? {}) as Record<string, unknown>;
      return { number, type, path, detail: rest };
    });
    compact(this.memory);
    this.n = p.previous.length;
    // A fresh run's claim notified its watchers (running: thinking since it started); a resumed one's did not.
    this.announce = this.n > 0;
    this.answers = p.previous.filter((s) => CONVERSATION.includes(s.type)).length;
    const spentMs = p.previous.reduce((t, s) => t + s.durationMs, 0);
    // Time lost to a transient failure and its retries counts too: a resumed attempt keeps the first one's deadline.
    resumable.deadline ??= Date.now() + run.timeoutSeconds * 1000 - spentMs;
    this.deadline = resumable.deadline;
    // Every call is cut short by a stop or the run's deadline. One pair of signals per run, not
    // per call. A timer may fire a millisecond before Date.now() reaches the deadline: the
    // timer's own signal, not the clock, says the deadline cut the call short.
    this.overtime = AbortSignal.timeout(Math.max(1, this.deadline - Date.now()));
    this.callSignal = AbortSignal.any([signal, this.overtime]);
  }

  async run(): Promise<Finish> {
    await this.openFirstPage();
    for (;;) {
      if (this.signal.aborted) return stopped(this.signal.reason);
      if (pauseAsked(this.start, this.deps.pause)) return PAUSED;
      const limit = await limitReached(this.prisma, this.start, {
        counted: this.n - this.answers,
        deadline: this.deadline,
        budget: this.budget,
        endpoint: this.p.endpoint,
      });
      if (limit) return limit;
      const t0 = performance.now();
      const reply = await this.callModel();
      if (reply === "again") {
        this.announce = true;
        continue;
      }
      if ("status" in reply) return reply;
      const end = await this.act({ reply, spent: this.spent(reply), t0, prompt: this.prompt });
      if (end) return end;
      // A step that lets the run go on was recorded: its row's notification says the next call is out.
      this.announce = false;
    }
  }

  /** A new context per step, so an owner's change to the agent's capabilities or rules takes
   * effect at its next step, not its next run. Reading a page lists actions with the
   * configuration that came back with the last recorded call; executing one reads it afresh,
   * so a rule the owner added while the model was thinking applies to that very action. */
  private fresh(executing = false): Ctx {
    if (executing) return { ...this.ctx };
    const { agent } = this.start;
    const row = { id: agent.id, parentId: agent.parentId, ownerStudioId: agent.ownerStudioId };
    return { ...this.ctx, primed: { agent: { ...row, agentConfig: this.budget.agentConfig } } };
  }

  private remember(number: number, s: Step) {
    runSteps.inc({ type: s.type });
    this.deps.trace?.recorded(s);
    // As the row keeps it: the calls a reply carried beyond the first are in its detail (steps.ts).
    const detail = s.unrun ? { ...s.detail, unrun: s.unrun } : s.detail;
    this.memory.push({ number, type: s.type, path: s.path ?? null, detail });
    compact(this.memory);
  }

  private async openFirstPage() {
    if (this.n > 0) {
      const seed = this.p.seed;
      this.page = await readPage(this.fresh(), seed?.page.path ?? lastPath(this.memory) ?? "/whoami");
      // A replay's first live step sees the page as the original saw it there, with its feedback and mode.
      if (seed) {
        this.page = { ...this.page, markdown: seed.page.markdown };
        this.pageRecorded = seed.pageRecorded;
        this.feedback = seed.feedback;
        this.jsonMode = seed.json;
        this.promptBudget = seed.budget;
      }
      return;
    }
    const t0 = performance.now();
    // The claim read /whoami for this run: its first page renders that, not a second read.
    const first = this.fresh();
    first.primed = { ...first.primed, whoami: this.start.whoami };
    this.page = await readPage(first, "/whoami");
    this.pageRecorded = true;
    const step: Step = {
      type: "navigate",
      path: "/whoami",
      detail: { ok: true, auto: true, resultPath: "/whoami", page: capPage(this.page.markdown) },
      durationMs: performance.now() - t0,
    };
    this.firstStep = recordStep(this.prisma, this.run0, this.deps.owner, { ...step, number: 1 });
    // Awaited in charge(), or settled by runNavigator when the run ends before a charge.
    this.firstStep.catch(() => undefined);
    this.inFlight.push(this.firstStep);
    this.n = 1;
    this.remember(1, step);
  }

  /** The model's reply; a Finish when the call ends the run; "again" to retry in JSON mode. */
  private async callModel(): Promise<LlmResponse | Finish | "again"> {
    const { run } = this.start;
    // Watchers see "thinking…" from the last row they were notified of (a step, the claim),
    // since the next call follows at once. Only a call no row precedes is announced: a
    // statement fewer per step, and a step costs what its statements cost.
    if (this.announce) callStarted(this.prisma, run, this.n + 1);
    const text = this.deps.text;
    const step = this.n + 1;
    try {
      // Built and encoded in a call of its own: while the model thinks, this frame holds the
      // encoded bytes only, not the prompt's parts and messages.
      const prompt = this.encodePrompt();
      return await (this.deps.trace ?? NO_TRACE).chat(this.p.model, this.p.endpoint, prompt, () =>
        this.deps.llm(this.p.endpoint, {
          prompt,
          signal: this.callSignal,
          ...(text && { onText: (t: string) => text.publish(run.id, step, t) }),
        }),
      );
    } catch (err) {
      if (!(err instanceof LlmError)) throw err;
      return this.callFailed(err);
    } finally {
      text?.end(run.id);
    }
  }

  /** This step's prompt, from the run's memory and current page, and how it was made (for its step). */
  private encodePrompt(): EncodedPrompt {
    const { run, agent, tenant, whoami } = this.start;
    const budget = this.promptBudget ?? this.deps.promptBudget ?? DEFAULT_PROMPT_BUDGET;
    const page = { path: this.page.path, markdown: this.page.markdown };
    const input = promptInput({
      agent,
      owner: ownerText(whoami.user),
      workspace: tenant.name,
      run,
      steps: this.memory,
      page,
      feedback: this.feedback,
      budget,
      jsonMode: this.jsonMode,
      usable: this.usable,
      lookup: (n) => registry.actions.get(n),
    });
    // The run's typed actions are tools of this call, beside the fixed three.
    this.typed = (input.tools ?? []).map((t) => (t.type === "function" ? t.function.name : ""));
    this.prompt = {
      budget,
      ...(this.jsonMode && { json: true }),
      ...(this.feedback && { feedback: this.feedback }),
      ...(!this.pageRecorded && { page: { path: page.path, markdown: capPage(page.markdown) } }),
      ...(input.tools && { tools: toolsHash(this.typed) }),
    };
    const { messages, stableChars } = buildPrompt(input);
    return encodePrompt(
      {
        model: this.p.model,
        messages,
        stableChars,
        jsonMode: this.jsonMode,
        tools: input.tools,
        cacheKey: agent.id,
      },
      apiOf(this.p.endpoint),
    );
  }

  private async callFailed(err: LlmError): Promise<Finish | "again"> {
    const { endpoint } = this.p;
    // A provider's error may quote the key it refused: masked like anything sent to a model.
    if (err.kind !== "aborted")
      this.deps.log?.warn({ kind: err.kind }, `LLM call failed: ${maskText(err.message)}`);
    if (err.kind === "aborted" || err.kind === "timeout") {
      if (this.signal.aborted) return stopped(this.signal.reason);
      if (this.overtime.aborted || Date.now() >= this.deadline) return timedOut(this.run0.timeoutSeconds);
    }
    const fallback = this.chain.next(this.p.model, err, this.deps.log);
    if (fallback) {
      this.p.model = fallback;
      return "again";
    }
    if (err.kind === "no_tools" && !this.jsonMode) {
      this.jsonMode = true;
      return "again";
    }
    if (err.kind === "auth" && endpoint.keyId) {
      await markKeyFailed(this.prisma, endpoint.keyId, err.message);
      return {
        status: "failed",
        stopReason: "llm_auth",
        error: `The provider refused the API key ${endpoint.label ?? ""}: ${err.message.replace(/\.+$/, "")}. Replace or re-test the key in your settings.`,
      };
    }
    return {
      status: "failed",
      stopReason: err.kind === "auth" ? "llm_auth" : "llm_error",
      error: err.message,
    };
  }

  private spent(reply: LlmResponse): UsageEntry {
    const { run, agent } = this.start;
    return {
      tenantId: run.tenantId,
      agentId: agent.id,
      ownerId: agent.parentId,
      runId: run.id,
      stepNumber: this.n + 1,
      apiKeyId: this.p.endpoint.keyId ?? null,
      model: this.p.model,
      usage: reply.usage,
      latencyMs: reply.latencyMs,
      price: priceCall(this.p.model, reply.usage, this.prices),
    };
  }

  /**
   * Spent is spent: the call's ledger row is written whatever happens to its step — with
   * the step when the step is only a record (one round trip), before it when the step runs
   * an action, whose transaction may roll back.
   */
  private async charge(
    turn: Turn,
    step?: Omit<Step, "inputTokens" | "outputTokens" | "llmMs" | "durationMs">,
  ) {
    await this.firstStep;
    const record = step && { ...step, ...this.measured(turn), number: this.n + 1 };
    const recorded = await recordUsage(
      this.prisma,
      turn.spent,
      new Date(),
      record && { owner: this.deps.owner, record },
    );
    this.budget = recorded.budget;
    if (!record) return;
    if (!recorded.stepped) throw new LeaseLostError();
    this.n += 1;
    this.remember(this.n, record);
  }

  private measured(turn: Turn) {
    const { usage, latencyMs, masked, message, fingerprint } = turn.reply;
    // The text a model may send beside its tool call: its reasoning, shown with the step.
    const text = message.tool_calls?.length ? message.content?.trim() : undefined;
    const unrun = unrunCalls(message);
    return {
      inputTokens: usage.input,
      outputTokens: usage.output,
      llmMs: latencyMs,
      masked,
      durationMs: performance.now() - turn.t0,
      prompt: { ...turn.prompt, hash: fingerprint },
      ...(text && { modelText: text }),
      ...this.chain.answeredBy(turn.spent.model),
      ...(unrun && { unrun }),
    };
  }

  private async act(turn: Turn): Promise<Finish | undefined> {
    const parsed = parseDecision(turn.reply.message, this.typed);
    if (!parsed.ok) return this.onInvalid(turn, parsed.error);
    this.invalid = 0;
    this.feedback = undefined;
    const d = parsed.decision;
    this.deps.trace?.tool(d, judgedConfig(this.ctx, this.budget.agentConfig));
    switch (d.type) {
      case "finish":
        return this.onFinish(turn, d);
      case "ask_owner":
        return this.onAsk(turn, d);
      case "navigate":
        return this.onNavigate(turn, d);
      case "execute":
        return this.onExecute(turn, d);
    }
  }

  private async onInvalid(turn: Turn, error: string): Promise<Finish | undefined> {
    this.invalid += 1;
    const reply = excerpt(JSON.stringify(turn.reply.message), 1000);
    await this.charge(turn, { type: "error", detail: { ok: false, error, reply } });
    if (this.invalid >= MAX_INVALID_IN_A_ROW)
      return {
        status: "failed",
        stopReason: "invalid_output",
        error: `The model replied with invalid output ${this.invalid} times in a row: ${error}`,
      };
    this.feedback = error;
  }

  private async onFinish(turn: Turn, d: Extract<Decision, { type: "finish" }>): Promise<Finish> {
    const at = this.page.path;
    await this.charge(turn, {
      type: "finish",
      path: at,
      detail: { message: d.message, resultPath: at, note: d.note },
    });
    return { status: "completed", stopReason: "finished", finalMessage: d.message };
  }

  private async onAsk(turn: Turn, d: Extract<Decision, { type: "ask_owner" }>): Promise<Finish> {
    const at = this.page.path;
    await this.charge(turn, {
      type: "ask_owner",
      path: at,
      detail: { question: d.question, resultPath: at, note: d.note },
    });
    return { status: "waiting", stopReason: "asked_owner", question: d.question };
  }

  private async onNavigate(turn: Turn, d: Extract<Decision, { type: "navigate" }>) {
    try {
      this.page = await readPage(this.fresh(), d.path);
      this.pageRecorded = true;
    } catch (err) {
      await this.charge(turn);
      throw err;
    }
    const ok = this.page.status === 200;
    await this.charge(turn, {
      type: "navigate",
      path: d.path,
      detail: {
        ok,
        status: this.page.status,
        resultPath: ok ? this.page.path : undefined,
        page: capPage(this.page.markdown),
        note: d.note,
      },
    });
    return undefined;
  }

  private async onExecute(
    turn: Turn,
    d: Extract<Decision, { type: "execute" }>,
  ): Promise<Finish | undefined> {
    const at = this.page.path;
    const asked = { action: d.action, params: d.params, note: d.note, reason: d.reason };
    // Not on this page at all: say which are. On the page but refused (a capability, a
    // role): let the registry refuse it, so the model hears the actual reason.
    if (!this.page.pageActions.includes(d.action)) {
      const error = `\`${d.action}\` is not an action on ${at}. Actions here: ${this.page.actions.map((a) => `\`${a}\``).join(", ") || "none"}.`;
      await this.charge(turn, { type: "execute", path: at, detail: { ok: false, ...asked, error } });
      this.feedback = error;
      return undefined;
    }
    const stepNo = this.n + 1;
    await this.charge(turn);
    let done: Step | undefined;
    const result = await runAction(this.fresh(true), at, d.action, d.params, {
      reason: d.reason,
      inTx: async (tx, outcome, emitted) => {
        // Same transaction as the action: the step, its resources and the action commit together or not at all.
        done = {
          type: "execute",
          path: at,
          detail: {
            ok: true,
            ...asked,
            notice: outcome.notice,
            location: outcome.location,
            resultPath: outcome.location,
            ...(outcome.pending && { pending: outcome.pending.id }),
          },
          ...this.measured(turn),
        };
        await recordStep(tx, this.run0, this.deps.owner, { ...done, number: stepNo });
        // A queued action is not a resource yet: it becomes one when approved (recorded then).
        const created = emitted.filter((e) => e.subjectType !== "pending_action");
        await recordResources(tx, this.run0, stepNo, outcome.location, created);
      },
    });
    if (!result.ok) {
      const failed: Step = {
        type: "execute",
        path: at,
        detail: { ok: false, ...asked, status: result.status, error: result.message },
        ...this.measured(turn),
      };
      await recordStep(this.prisma, this.run0, this.deps.owner, { ...failed, number: stepNo });
      this.n = stepNo;
      this.remember(stepNo, failed);
      this.feedback = result.markdown;
      return undefined;
    }
    this.n = stepNo;
    this.remember(stepNo, done!);
    this.page = result.page;
    this.pageRecorded = false;
    if (result.outcome.pending?.waits)
      return {
        status: "waiting",
        stopReason: "awaiting_approval",
        question: `Waiting for approval of #${result.outcome.pending.id}: ${d.action}`,
      };
    return undefined;
  }
}

export type { StopReason, Usage };
