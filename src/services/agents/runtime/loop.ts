// The navigator's loop: starts at /whoami and steps — limits, prompt, model, act, record —
// until `finish`, a limit, a stop or pause request or a fatal error. Its state is one value
// each step returns (step-state.ts); all it does outside goes through its ports (ports.ts).
// Each step is recorded before the next begins, so a recovered run resumes where it was
// and never repeats an action; the prompt is rebuilt from the recorded steps (memory.ts),
// so a resumed run remembers what it would have without the break.
import type { Finish } from "../core/runs.ts";
import { maskText } from "../core/secret-masking.ts";
import { lastPath } from "../prompt/memory.ts";
import { capPage } from "../prompt/prompt.ts";
import { act } from "./decisions.ts";
import { LlmError, type LlmResponse } from "./llm.ts";
import { limitReached, timedOut } from "./navigator-setup.ts";
import { PAUSED, pauseAsked } from "./pause.ts";
import type { Step } from "./ports.ts";
import {
  end,
  type LoopRun,
  type Next,
  remembered,
  type StepState,
  stateAtStart,
  stopped,
} from "./step-state.ts";
import { spentOn, stepPrompt } from "./turn.ts";

/** Runs the loop from its first page to the run's end. */
export async function navigate(run: LoopRun): Promise<Finish> {
  let state = await openFirstPage(run);
  for (;;) {
    const next = await step(run, state);
    if (next.type === "end") return next.finish;
    // A retried call follows no new row, so watchers are told of it; a step that lets the
    // run go on was recorded, and its row's notification says the next call is out.
    state = { ...next.state, announce: next.type === "retry" };
  }
}

/** One step: the checks before a call, the call, and what its reply decided. */
export async function step(run: LoopRun, state: StepState): Promise<Next> {
  if (run.stop.aborted) return end(stopped(run.stop.reason));
  if (pauseAsked(run.start, run.pause)) return end(PAUSED);
  const limit = await limitReached(run.start, {
    counted: state.stepCount - run.answers,
    deadline: run.deadline,
    budget: state.budget,
    endpoint: run.prepared.endpoint,
    pauseAtCostLimit: (budget) => run.ports.pauseAtCostLimit(budget),
    experimentStop: run.ports.experimentStop,
  });
  if (limit) return end(limit);
  const startedAt = performance.now();
  const called = await callModel(run, state);
  if (called.type !== "reply") return called;
  const { reply, prompt } = called;
  return act(run, state, {
    reply,
    spent: spentOn(run, state, reply),
    startedAt,
    prompt: prompt.facts,
    typed: prompt.typed,
    logFrom: prompt.logFrom,
  });
}

async function openFirstPage(run: LoopRun): Promise<StepState> {
  const begun = stateAtStart(run);
  const agentConfig = begun.budget.agentConfig;
  if (begun.stepCount > 0) {
    const seed = run.prepared.seed;
    const page = await run.ports.readPage(
      seed?.page.path ?? lastPath(begun.memory) ?? "/whoami",
      agentConfig,
    );
    if (!seed) return { ...begun, page, pageRecorded: false };
    // A replay's first live step sees the page as the original saw it there, with its feedback and mode.
    return {
      ...begun,
      page: { ...page, markdown: seed.page.markdown },
      pageRecorded: seed.pageRecorded,
      feedback: seed.feedback,
      jsonMode: seed.json,
      promptBudget: seed.budget,
    };
  }
  const startedAt = performance.now();
  // The claim read /whoami for this run: its first page renders that, not a second read.
  const page = await run.ports.readFirstPage(agentConfig);
  const first: Step = {
    type: "navigate",
    path: "/whoami",
    detail: { ok: true, auto: true, resultPath: "/whoami", page: capPage(page.markdown) },
    durationMs: performance.now() - startedAt,
  };
  const firstRecord = run.ports.recordStep({ ...first, number: 1 });
  // Awaited before the first charge, or settled by runNavigator when the run ends before a charge.
  firstRecord.catch(() => undefined);
  return remembered(run, { ...begun, page, pageRecorded: true, firstRecord }, 1, first);
}

type Called = { type: "reply"; reply: LlmResponse; prompt: ReturnType<typeof stepPrompt> } | Next;

/** The model's reply, or what its failure decided: end the run, or ask again. */
async function callModel(run: LoopRun, state: StepState): Promise<Called> {
  const stepNumber = state.stepCount + 1;
  // Watchers see "thinking…" from the last row they were notified of (a step, the claim),
  // since the next call follows at once. Only a call no row precedes is announced: a
  // statement fewer per step, and a step costs what its statements cost.
  if (state.announce) run.ports.emit({ type: "call_started", stepNumber });
  try {
    const prompt = stepPrompt(run, state);
    const reply = await run.ports.callModel(state.model, {
      prompt: prompt.encoded,
      signal: run.callSignal,
      onText: (text: string) => run.ports.emit({ type: "text", stepNumber, text }),
    });
    return { type: "reply", reply, prompt };
  } catch (err) {
    if (!(err instanceof LlmError)) throw err;
    return callFailed(run, state, err);
  } finally {
    run.ports.emit({ type: "text_end" });
  }
}

async function callFailed(run: LoopRun, state: StepState, err: LlmError): Promise<Next> {
  const { endpoint } = run.prepared;
  // A provider's error may quote the key it refused: masked like anything sent to a model.
  if (err.kind !== "aborted")
    run.ports.emit({
      type: "warning",
      fields: { kind: err.kind },
      message: `LLM call failed: ${maskText(err.message)}`,
    });
  if (err.kind === "aborted" || err.kind === "timeout") {
    if (run.stop.aborted) return end(stopped(run.stop.reason));
    if (run.overtime.aborted || Date.now() >= run.deadline)
      return end(timedOut(run.start.run.timeoutSeconds));
  }
  const fallback = run.chain.next(state.model, err);
  if (fallback) {
    run.ports.emit({
      type: "warning",
      fields: { from: state.model, to: fallback, kind: err.kind },
      message: "model failed; falling back to the next model",
    });
    return { type: "retry", reason: "fallback", state: { ...state, model: fallback } };
  }
  if (err.kind === "no_tools" && !state.jsonMode)
    return { type: "retry", reason: "json_mode", state: { ...state, jsonMode: true } };
  if (err.kind === "auth" && endpoint.keyId) {
    await run.ports.markKeyFailed(endpoint.keyId, err.message);
    return end({
      status: "failed",
      stopReason: "llm_auth",
      error: `The provider refused the API key ${endpoint.label ?? ""}: ${err.message.replace(/\.+$/, "")}. Replace or re-test the key in your settings.`,
    });
  }
  return end({
    status: "failed",
    stopReason: err.kind === "auth" ? "llm_auth" : "llm_error",
    error: err.message,
  });
}
