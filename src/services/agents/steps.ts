// Recording steps. A step row is keyed (run, number): the idempotency key that makes a
// retried or recovered job unable to record — and so to execute — step N twice. The
// run's counters move in the same statement, guarded by the lease.
import type { Db } from "../../db/prisma.ts";
import type { Prisma, SubagentTaskRunStep } from "../../generated/prisma/client.ts";
import { newId } from "../../lib/ids.ts";
import type { Emitted } from "../registry/types.ts";

export class LeaseLostError extends Error {
  constructor() {
    super("this worker no longer holds the run's lease");
  }
}

export interface StepRecord {
  number: number;
  type: "navigate" | "execute" | "error" | "finish" | "ask_owner" | "answer";
  path?: string;
  detail: Record<string, unknown>;
  inputTokens?: number;
  outputTokens?: number;
  llmMs?: number;
  durationMs?: number;
}

export async function recordStep(
  tx: Db,
  run: { id: string; tenantId: string },
  owner: string | null,
  s: StepRecord,
) {
  // The lease guard: only the worker holding the run may advance it (null: the owner answering a waiting run).
  const updated = await tx.subagentTaskRun.updateMany({
    where: {
      id: run.id,
      ...(owner ? { leaseOwner: owner, status: "running" } : {}),
      stepsCount: s.number - 1,
    },
    data: {
      stepsCount: s.number,
      inputTokens: { increment: s.inputTokens ?? 0 },
      outputTokens: { increment: s.outputTokens ?? 0 },
    },
  });
  if (updated.count !== 1) throw new LeaseLostError();
  await tx.subagentTaskRunStep.create({
    data: {
      id: newId(),
      runId: run.id,
      tenantId: run.tenantId,
      number: s.number,
      type: s.type,
      path: s.path ?? null,
      detail: s.detail as Prisma.InputJsonValue,
      inputTokens: s.inputTokens ?? 0,
      outputTokens: s.outputTokens ?? 0,
      llmMs: Math.round(s.llmMs ?? 0),
      durationMs: Math.round(s.durationMs ?? 0),
    },
  });
}

export async function recordResources(
  tx: Db,
  run: { id: string; tenantId: string },
  step: number,
  action: string,
  path: string,
  emitted: Emitted[],
) {
  if (!emitted.length) return;
  await tx.subagentTaskRunResource.createMany({
    data: emitted.map((e) => ({
      id: newId(),
      runId: run.id,
      tenantId: run.tenantId,
      stepNumber: step,
      resourceType: e.subjectType,
      resourceId: e.subjectId,
      action: e.type,
      path,
    })),
  });
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** One line per step for the prompt's history: enough to remember, short enough to stay flat. */
export function summarize(step: { type: string; path?: string | null; detail: unknown }): string {
  const d = (step.detail ?? {}) as Record<string, unknown>;
  const outcome = d.ok === false ? `failed: ${clip(String(d.error ?? ""), 160)}` : "ok";
  switch (step.type) {
    case "navigate":
      return `navigate ${step.path} — ${d.ok === false ? `error ${d.status}` : "ok"}`;
    case "execute":
      return `execute ${d.action}(${clip(JSON.stringify(d.params ?? {}), 160)}) on ${step.path} — ${d.ok === false ? outcome : `ok: ${clip(String(d.notice ?? ""), 120)}`}`;
    case "error":
      return `invalid reply — ${clip(String(d.error ?? ""), 160)}`;
    case "ask_owner":
      return `asked your owner: "${clip(String(d.question ?? ""), 200)}"`;
    case "answer":
      return `your owner answered: "${clip(String(d.answer ?? ""), 500)}"`;
    default:
      return `${step.type}`;
  }
}

/** Where the agent was after its last step (a resumed run continues from there). */
export function lastPath(steps: Pick<SubagentTaskRunStep, "detail">[]): string | null {
  for (let i = steps.length - 1; i >= 0; i--) {
    const p = (steps[i]!.detail as Record<string, unknown> | null)?.resultPath;
    if (typeof p === "string") return p;
  }
  return null;
}
