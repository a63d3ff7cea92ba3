// The AgentNavigator: starts at /whoami and loops — prompt, LLM, act through the
// internal markdown API, record — until `finish`, a limit, a stop request or a fatal
// error. Each step is recorded before the next begins, so a recovered run resumes
// where it was and never repeats an action.
import type { PrismaClient } from "../../db/prisma.ts";
import { type MarkdownPage, readPage, runAction } from "../markdown-api.ts";
import { endpointFor, KeyUnavailableError, markKeyFailed } from "../money/keys.ts";
import { type Budget, budgetAtStart, pauseAtLimit, recordUsage, type UsageEntry } from "../money/ledger.ts";
import { priceCall, usd } from "../money/pricing.ts";
import { DecryptError } from "../money/secrets.ts";
import { primeWhoami } from "../pages/whoami-read.ts";
import { type Ctx, toActor } from "../registry/types.ts";
import type { StopReason } from "./heartbeat.ts";
import { type Endpoint, type LlmClient, LlmError, type Usage } from "./llm.ts";
import { primeAgent } from "./policy.ts";
import { buildMessages } from "./prompt.ts";
import { parseDecision } from "./protocol.ts";
import type { RunStart } from "./run-start.ts";
import type { Finish } from "./runs.ts";
import { agentConfig, resolveModel, tenantSettings } from "./settings.ts";
import {
  LeaseLostError,
  lastPath,
  recordResources,
  recordStep,
  type StepRecord,
  summarize,
} from "./steps.ts";

export const MAX_INVALID_IN_A_ROW = 3;

export interface NavigatorDeps {
  prisma: PrismaClient;
  llm: LlmClient;
  /** The shared endpoint (operator's proxy); null when none is configured. */
  endpoint: Endpoint | null;
  defaultModel?: string;
  /** The worker's lease id, required to advance the run. */
  owner: string;
}

const excerpt = (s: string, n = 2000) => (s.length > n ? `${s.slice(0, n)}…` : s);

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
    return await navigate(deps, start, signal, inFlight, resumable);
  } finally {
    // A run never ends ahead of a record it started: its end would race the record's lease check.
    await Promise.allSettled(inFlight);
  }
}

async function navigate(
  deps: NavigatorDeps,
  start: RunStart,
  signal: AbortSignal,
  inFlight: Promise<unknown>[],
  resumable: Resumable,
): Promise<Finish> {
  const { prisma } = deps;
  // The claim read the agent, its owner and the tenant; a run that never recorded a step has none to resume from.
  const { run, agent, tenant } = start;
  const previous = run.stepsCount
    ? await prisma.subagentTaskRunStep.findMany({ where: { runId: run.id }, orderBy: { number: "asc" } })
    : [];
  const cfg = agentConfig(agent);
  const model = run.model ?? resolveModel(cfg, tenantSettings(tenant), deps.defaultModel);
  if (!model)
    return {
      status: "failed",
      stopReason: "no_model",
      error:
        "No model is configured: set one on the agent, a tenant default, or LLM_DEFAULT_MODEL on the server.",
    };
  let endpoint: Endpoint | null;
  try {
    endpoint = await endpointFor(prisma, agent, cfg.api_key_id, deps.endpoint);
  } catch (err) {
    if (!(err instanceof KeyUnavailableError || err instanceof DecryptError)) throw err;
    const error =
      err instanceof DecryptError
        ? `This agent's API key (id ${cfg.api_key_id}) cannot be decrypted with the server's keys (APP_ENCRYPTION_KEYS): add it again.`
        : err.message;
    return { status: "failed", stopReason: "api_key_unavailable", error };
  }
  if (!endpoint)
    return {
      status: "failed",
      stopReason: "no_endpoint",
      error: "No LLM endpoint is configured (LLM_BASE_URL), and the agent has no API key of its own.",
    };
  const prices = tenantSettings(tenant).pricing;

  const ctx: Ctx = {
    db: prisma,
    tenant,
    actor: toActor(agent),
    run: { id: run.id, chainDepth: run.chainDepth },
  };
  // Checked before every LLM call, not once per run: the owner may lower the limit or
  // revoke the key meanwhile. Read with the claim; every recorded call returns it as it leaves it.
  let budget: Budget = budgetAtStart(agent.agentConfig, start.whoami.spentMicros);
  // A new context per step, so an owner's change to the agent's capabilities or rules takes
  // effect at its next step, not its next run. Reading a page lists actions with the
  // configuration that came back with the last recorded call; executing one reads it afresh,
  // so a rule the owner added while the model was thinking applies to that very action.
  const fresh = (executing = false): Ctx => {
    const c = { ...ctx };
    if (!executing)
      primeAgent(c, { id: agent.id, parentId: agent.parentId, agentConfig: budget.agentConfig });
    return c;
  };
  const history = previous.map(summarize);
  let n = previous.length;
  // A question and its answer are a conversation with the owner, not work: recorded as
  // steps, but not counted against the limit, so an answer always reaches the model.
  const answers = previous.filter((s) => ["answer", "ask_owner", "approval"].includes(s.type)).length;
  const spentMs = previous.reduce((t, s) => t + s.durationMs, 0);
  // Time lost to a transient failure and its retries counts too: a resumed attempt keeps the first one's deadline.
  resumable.deadline ??= Date.now() + run.timeoutSeconds * 1000 - spentMs;
  const deadline = resumable.deadline;

  const record = async (s: Omit<StepRecord, "number">) => {
    await recordStep(prisma, run, deps.owner, { ...s, number: n + 1 });
    n += 1;
  };

  let page: MarkdownPage;
  // The first step only records the /whoami read, so the model need not wait for it: it is
  // written while the first call is out, and awaited before that call is charged as step 2.
  let firstStep: Promise<void> = Promise.resolve();
  if (n === 0) {
    const t0 = performance.now();
    const first = fresh();
    primeWhoami(first, start.whoami);
    page = await readPage(first, "/whoami");
    firstStep = recordStep(prisma, run, deps.owner, {
      number: 1,
      type: "navigate",
      path: "/whoami",
      detail: { ok: true, auto: true, resultPath: "/whoami", page: excerpt(page.markdown) },
      durationMs: performance.now() - t0,
    });
    // Awaited in charge(), or settled by runNavigator when the run ends before a charge.
    firstStep.catch(() => undefined);
    inFlight.push(firstStep);
    n = 1;
    history.push(summarize({ type: "navigate", path: "/whoami", detail: { ok: true } }));
  } else page = await readPage(fresh(), lastPath(previous) ?? "/whoami");

  // Every call is cut short by a stop or the run's deadline. One pair of signals per run, not
  // per call. A timer may fire a millisecond before Date.now() reaches the deadline: the
  // timer's own signal, not the clock, says the deadline cut the call short.
  const overtime = AbortSignal.timeout(Math.max(1, deadline - Date.now()));
  const callSignal = AbortSignal.any([signal, overtime]);

  let invalid = 0;
  let feedback: string | undefined;
  let jsonMode = false;
  for (;;) {
    if (signal.aborted) return stopped(signal.reason);
    if (n - answers >= run.maxSteps)
      return {
        status: "failed",
        stopReason: "max_steps",
        error: `Reached the limit of ${run.maxSteps} steps before finishing.`,
      };
    if (Date.now() >= deadline)
      return {
        status: "timed_out",
        stopReason: "timeout",
        error: `Ran out of time (${run.timeoutSeconds} s).`,
      };

    // Revoking a key is often urgent (it leaked): a run using it stops at its next call.
    if (budget.keyGone)
      return {
        status: "failed",
        stopReason: "api_key_unavailable",
        error: `The API key ${endpoint.label ?? ""} was revoked during the run: pick another key, or the shared endpoint, on the agent's page.`,
      };
    if (budget.spentMicros >= budget.limitMicros) {
      await pauseAtLimit(prisma, agent, budget, run.id);
      return {
        status: "cancelled",
        stopReason: "cost_limit",
        error: `Stopped at the monthly cost limit: ${usd(budget.spentMicros)} spent of ${usd(budget.limitMicros)}. The agent is paused until you raise its limit or resume it.`,
      };
    }

    const t0 = performance.now();
    const messages = buildMessages({
      agent: { name: agent.name, handle: agent.handle, identityPrompt: cfg.identity_prompt },
      owner: start.whoami.user.parent ?? { name: "nobody", handle: "nobody" },
      workspace: tenant.name,
      task: run.task,
      history,
      page: { path: page.path, markdown: page.markdown },
      feedback,
      stepsLeft: run.maxSteps - (n - answers),
    });
    let reply: Awaited<ReturnType<LlmClient>>;
    try {
      reply = await deps.llm(endpoint, { model, messages, jsonMode, signal: callSignal });
    } catch (err) {
      if (!(err instanceof LlmError)) throw err;
      if (err.kind === "aborted" || err.kind === "timeout") {
        if (signal.aborted) return stopped(signal.reason);
        if (overtime.aborted || Date.now() >= deadline)
          return {
            status: "timed_out",
            stopReason: "timeout",
            error: `Ran out of time (${run.timeoutSeconds} s).`,
          };
      }
      if (err.kind === "no_tools" && !jsonMode) {
        jsonMode = true;
        continue;
      }
      if (err.kind === "auth" && endpoint.keyId) {
        await markKeyFailed(prisma, endpoint.keyId, err.message);
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
    const spent: UsageEntry = {
      tenantId: run.tenantId,
      agentId: agent.id,
      ownerId: agent.parentId,
      runId: run.id,
      stepNumber: n + 1,
      apiKeyId: endpoint.keyId ?? null,
      model,
      usage: reply.usage,
      latencyMs: reply.latencyMs,
      price: priceCall(model, reply.usage, prices),
    };
    // Spent is spent: the call's ledger row is written whatever happens to its step —
    // with the step when the step is only a record (one round trip), before it when the
    // step runs an action, whose transaction may roll back.
    const charge = async (step?: Omit<StepRecord, "number">) => {
      await firstStep;
      const recorded = await recordUsage(
        prisma,
        spent,
        new Date(),
        step && { owner: deps.owner, record: { ...step, number: n + 1 } },
      );
      budget = recorded.budget;
      if (!step) return;
      if (!recorded.stepped) throw new LeaseLostError();
      n += 1;
    };
    const tokens = {
      inputTokens: reply.usage.input,
      outputTokens: reply.usage.output,
      llmMs: reply.latencyMs,
      masked: reply.masked,
    };
    const took = () => performance.now() - t0;
    const parsed = parseDecision(reply.message);

    if (!parsed.ok) {
      invalid += 1;
      const error = parsed.error;
      await charge({
        type: "error",
        detail: { ok: false, error, reply: excerpt(JSON.stringify(reply.message), 1000) },
        ...tokens,
        durationMs: took(),
      });
      history.push(`invalid reply — ${error}`);
      if (invalid >= MAX_INVALID_IN_A_ROW)
        return {
          status: "failed",
          stopReason: "invalid_output",
          error: `The model replied with invalid output ${invalid} times in a row: ${error}`,
        };
      feedback = error;
      continue;
    }
    invalid = 0;
    feedback = undefined;
    const d = parsed.decision;

    if (d.type === "finish") {
      await charge({
        type: "finish",
        path: page.path,
        detail: { message: d.message, resultPath: page.path },
        ...tokens,
        durationMs: took(),
      });
      return { status: "completed", stopReason: "finished", finalMessage: d.message };
    }
    if (d.type === "ask_owner") {
      await charge({
        type: "ask_owner",
        path: page.path,
        detail: { question: d.question, resultPath: page.path },
        ...tokens,
        durationMs: took(),
      });
      return { status: "waiting", stopReason: "asked_owner", question: d.question };
    }
    if (d.type === "navigate") {
      try {
        page = await readPage(fresh(), d.path);
      } catch (err) {
        await charge();
        throw err;
      }
      const ok = page.status === 200;
      await charge({
        type: "navigate",
        path: d.path,
        detail: {
          ok,
          status: page.status,
          resultPath: ok ? page.path : undefined,
          page: excerpt(page.markdown),
        },
        ...tokens,
        durationMs: took(),
      });
      history.push(summarize({ type: "navigate", path: d.path, detail: { ok, status: page.status } }));
      continue;
    }

    // execute
    // Not on this page at all: say which are. On the page but refused (a capability, a
    // role): let the registry refuse it, so the model hears the actual reason.
    if (!page.pageActions.includes(d.action)) {
      const error = `\`${d.action}\` is not an action on ${page.path}. Actions here: ${page.actions.map((a) => `\`${a}\``).join(", ") || "none"}.`;
      await charge({
        type: "execute",
        path: page.path,
        detail: { ok: false, action: d.action, params: d.params, error },
        ...tokens,
        durationMs: took(),
      });
      history.push(
        summarize({
          type: "execute",
          path: page.path,
          detail: { ok: false, action: d.action, params: d.params, error },
        }),
      );
      feedback = error;
      continue;
    }
    const at = page.path;
    const stepNo = n + 1;
    await charge();
    const result = await runAction(fresh(true), at, d.action, d.params, {
      reason: d.reason,
      inTx: async (tx, outcome, emitted) => {
        // Same transaction as the action: the step, its resources and the action commit together or not at all.
        await recordStep(tx, run, deps.owner, {
          number: stepNo,
          type: "execute",
          path: at,
          detail: {
            ok: true,
            action: d.action,
            params: d.params,
            notice: outcome.notice,
            location: outcome.location,
            resultPath: outcome.location,
            ...(outcome.pending && { pending: outcome.pending.id }),
          },
          ...tokens,
          durationMs: took(),
        });
        // A queued action is not a resource yet: it becomes one when approved (recorded then).
        const created = emitted.filter((e) => e.subjectType !== "pending_action");
        await recordResources(tx, run, stepNo, outcome.location, created);
      },
    });
    if (result.ok) {
      n = stepNo;
      page = result.page;
      if (result.outcome.pending?.waits)
        return {
          status: "waiting",
          stopReason: "awaiting_approval",
          question: `Waiting for approval of #${result.outcome.pending.id}: ${d.action}`,
        };
      history.push(
        summarize({
          type: "execute",
          path: at,
          detail: { ok: true, action: d.action, params: d.params, notice: result.outcome.notice },
        }),
      );
    } else {
      await record({
        type: "execute",
        path: at,
        detail: {
          ok: false,
          action: d.action,
          params: d.params,
          status: result.status,
          error: result.message,
        },
        ...tokens,
        durationMs: took(),
      });
      history.push(
        summarize({
          type: "execute",
          path: at,
          detail: { ok: false, action: d.action, params: d.params, error: result.message },
        }),
      );
      feedback = result.markdown;
    }
  }
}

export type { StopReason, Usage };
