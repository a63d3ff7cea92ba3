// Recording steps. A step row is keyed (run, number): the idempotency key that makes a
// retried or recovered job unable to record — and so to execute — step N twice. The
// run's step counter moves in the same statement, guarded by the lease; its token and
// cost totals move with the usage ledger (money/ledger.ts), which counts every call.
import { type Db, hotQuery } from "../../db/prisma.ts";
import { Prisma, type SubagentTaskRunStep } from "../../generated/prisma/client.ts";
import { newId } from "../../lib/ids.ts";
import type { Emitted } from "../registry/types.ts";

export class LeaseLostError extends Error {
  constructor() {
    super("this worker no longer holds the run's lease");
  }
}

export interface StepRecord {
  number: number;
  type: "navigate" | "execute" | "error" | "finish" | "ask_owner" | "answer" | "approval";
  path?: string;
  detail: Record<string, unknown>;
  inputTokens?: number;
  outputTokens?: number;
  llmMs?: number;
  durationMs?: number;
}

/** Whether step N may be recorded: this worker holds the run's lease (owner null: the owner answering a waiting run) and N-1 is its last step. */
export const mayRecordSql = (owner: string | null, number: number) =>
  Prisma.sql`(steps_count = ${number - 1} AND (${owner}::text IS NULL OR (lease_owner = ${owner} AND status = 'running')))`;

/**
 * The CTE `step`: inserts step N for the run the CTE `gate` returns, so it has a row
 * exactly when the step was recorded. The ledger's statement uses it too
 * (money/ledger.ts): a step and the LLM call that chose it are recorded in one round trip.
 */
export function stepInsertSql(run: { tenantId: string }, s: StepRecord): Prisma.Sql {
  return Prisma.sql`step AS (
      INSERT INTO subagent_task_run_steps
        (id, run_id, tenant_id, number, type, path, detail, input_tokens, output_tokens, llm_ms, duration_ms, created_at)
      SELECT ${newId()}, gate.id, ${run.tenantId}, ${s.number}, ${s.type}, ${s.path ?? null},
             ${JSON.stringify(s.detail)}::jsonb, ${s.inputTokens ?? 0}, ${s.outputTokens ?? 0},
             ${Math.round(s.llmMs ?? 0)}, ${Math.round(s.durationMs ?? 0)}, clock_timestamp()
      FROM gate
      RETURNING id
    )`;
}

export async function recordStep(
  tx: Db,
  run: { id: string; tenantId: string },
  owner: string | null,
  s: StepRecord,
) {
  // One statement on the hot path of every step: the counter moves (guarded) and the row
  // is inserted in one round trip, not two.
  const rows = await hotQuery<{ id: string }>(
    tx,
    Prisma.sql`
    WITH gate AS (
      UPDATE subagent_task_runs SET steps_count = ${s.number}
      WHERE id = ${run.id} AND ${mayRecordSql(owner, s.number)}
      RETURNING id
    ), ${stepInsertSql(run, s)}
    SELECT id FROM step`,
  );
  if (rows.length !== 1) throw new LeaseLostError();
}

export async function recordResources(
  tx: Db,
  run: { id: string; tenantId: string },
  step: number,
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
    case "approval":
      return `your owner's review of #${d.pending} (${d.action}): ${d.status}${d.notice ? ` — ${clip(String(d.notice), 160)}` : d.message ? ` — ${clip(String(d.message), 300)}` : ""}`;
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
