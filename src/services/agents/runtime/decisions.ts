// What each of the model's decisions does: a reply is parsed, acted on through the ports,
// charged and recorded, and answered with what the loop does next (step-state.ts `Next`).

import { TOOLS_PATH } from "../../actions/tool-calls.ts";
import { LeaseLostError } from "../core/steps.ts";
import { capPage } from "../prompt/prompt.ts";
import { type Decision, parseDecision } from "../prompt/protocol.ts";
import type { Step } from "./ports.ts";
import { end, type LoopRun, type Next, remembered, type StepState } from "./step-state.ts";
import { measured, type Turn } from "./turn.ts";

export const MAX_INVALID_IN_A_ROW = 3;

type Unmeasured = Omit<Step, "inputTokens" | "outputTokens" | "llmMs" | "durationMs">;
type DecisionOf<Type extends Decision["type"]> = Extract<Decision, { type: Type }>;

const excerpt = (text: string, length: number) => (text.length > length ? `${text.slice(0, length)}…` : text);

const proceed = (state: StepState): Next => ({ type: "continue", state });

export async function act(run: LoopRun, state: StepState, turn: Turn): Promise<Next> {
  const parsed = parseDecision(turn.reply.message, turn.typed);
  if (!parsed.ok) return onInvalid(run, state, turn, parsed.error);
  const valid: StepState = { ...state, invalidInARow: 0, feedback: undefined };
  const decision = parsed.decision;
  run.ports.emit({ type: "decided", decision, agentConfig: state.budget.agentConfig });
  switch (decision.type) {
    case "finish":
      return onFinish(run, valid, turn, decision);
    case "ask_owner":
      return onAsk(run, valid, turn, decision);
    case "navigate":
      return onNavigate(run, valid, turn, decision);
    case "execute":
      return onExecute(run, valid, turn, decision);
  }
}

/**
 * Spent is spent: the call's ledger row is written whatever happens to its step — with
 * the step when the step is only a record (one round trip), before it when the step runs
 * an action, whose transaction may roll back.
 */
async function charge(run: LoopRun, state: StepState, turn: Turn, step?: Unmeasured): Promise<StepState> {
  await state.firstRecord;
  const number = state.stepCount + 1;
  const record = step && { ...step, ...measured(run, turn), number };
  const charged = await run.ports.charge(turn.spent, record);
  const after = { ...state, budget: charged.budget };
  if (!record) return after;
  if (!charged.stepped) throw new LeaseLostError();
  return remembered(run, after, number, record);
}

async function onInvalid(run: LoopRun, state: StepState, turn: Turn, error: string): Promise<Next> {
  const invalidInARow = state.invalidInARow + 1;
  const reply = excerpt(JSON.stringify(turn.reply.message), 1000);
  const after = await charge(run, { ...state, invalidInARow }, turn, {
    type: "error",
    detail: { ok: false, error, reply },
  });
  if (invalidInARow >= MAX_INVALID_IN_A_ROW)
    return end({
      status: "failed",
      stopReason: "invalid_output",
      error: `The model replied with invalid output ${invalidInARow} times in a row: ${error}`,
    });
  return proceed({ ...after, feedback: error });
}

async function onFinish(run: LoopRun, state: StepState, turn: Turn, decision: DecisionOf<"finish">) {
  const at = state.page.path;
  await charge(run, state, turn, {
    type: "finish",
    path: at,
    detail: { message: decision.message, resultPath: at, note: decision.note },
  });
  return end({ status: "completed", stopReason: "finished", finalMessage: decision.message });
}

async function onAsk(run: LoopRun, state: StepState, turn: Turn, decision: DecisionOf<"ask_owner">) {
  const at = state.page.path;
  await charge(run, state, turn, {
    type: "ask_owner",
    path: at,
    detail: { question: decision.question, resultPath: at, note: decision.note },
  });
  // An experiment's run has nobody to answer it (its results wait on every run's end): the question ends it.
  if (run.start.run.experimentId)
    return end({
      status: "failed",
      stopReason: "asked_owner",
      error: `It asked its owner a question, which an experiment's run cannot wait for: ${decision.question}`,
    });
  return end({ status: "waiting", stopReason: "asked_owner", question: decision.question });
}

async function onNavigate(run: LoopRun, state: StepState, turn: Turn, decision: DecisionOf<"navigate">) {
  let page: StepState["page"];
  try {
    page = await run.ports.readPage(decision.path, state.budget.agentConfig);
  } catch (err) {
    await charge(run, state, turn);
    throw err;
  }
  const ok = page.status === 200;
  const after = await charge(run, { ...state, page, pageRecorded: true }, turn, {
    type: "navigate",
    path: decision.path,
    detail: {
      ok,
      status: page.status,
      resultPath: ok ? page.path : undefined,
      page: capPage(page.markdown),
      note: decision.note,
    },
  });
  return proceed(after);
}

async function onExecute(
  run: LoopRun,
  state: StepState,
  turn: Turn,
  decision: DecisionOf<"execute">,
): Promise<Next> {
  const at = state.page.path;
  const asked = {
    action: decision.action,
    params: decision.params,
    note: decision.note,
    reason: decision.reason,
  };
  // A connected tool is called from any page, through `call_tool` on /tools (actions/tool-calls.ts).
  const tool = run.toolNames.has(decision.action);
  // Not on this page at all: say which are. On the page but refused (a capability, a
  // role): let the registry refuse it, so the model hears the actual reason.
  if (!tool && !state.page.pageActions.includes(decision.action)) {
    const listed = state.page.actions.map((action) => `\`${action}\``).join(", ") || "none";
    const error = `\`${decision.action}\` is not an action on ${at}. Actions here: ${listed}.`;
    const after = await charge(run, state, turn, {
      type: "execute",
      path: at,
      detail: { ok: false, ...asked, error },
    });
    return proceed({ ...after, feedback: error });
  }
  const stepNumber = state.stepCount + 1;
  const charged = await charge(run, state, turn);
  const where = tool ? TOOLS_PATH : at;
  const result = await run.ports.act({
    path: where,
    action: tool ? "call_tool" : decision.action,
    params: tool ? { tool: decision.action, arguments: decision.params } : decision.params,
    reason: decision.reason,
    stepNumber,
    // Same transaction as the action: the step, its resources and the action commit together or not at all.
    step: (outcome) => ({
      type: "execute",
      path: where,
      detail: {
        ok: true,
        ...asked,
        notice: outcome.notice,
        location: outcome.location,
        resultPath: outcome.location,
        ...outcome.recorded,
        ...(outcome.pending && { pending: outcome.pending.id }),
        ...(outcome.rehearsed && { dry: outcome.rehearsed }),
      },
      ...measured(run, turn),
    }),
  });
  if (!result.ok) {
    const failed: Step = {
      type: "execute",
      path: where,
      detail: { ok: false, ...asked, status: result.status, error: result.message },
      ...measured(run, turn),
    };
    await run.ports.recordStep({ ...failed, number: stepNumber });
    return proceed({ ...remembered(run, charged, stepNumber, failed), feedback: result.markdown });
  }
  const after = remembered(run, charged, stepNumber, result.recorded);
  const next = { ...after, page: result.page, pageRecorded: false };
  if (result.pending?.waits)
    return end({
      status: "waiting",
      stopReason: "awaiting_approval",
      question: `Waiting for approval of #${result.pending.id}: ${decision.action}`,
    });
  return proceed(next);
}
