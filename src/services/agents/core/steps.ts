// Recording steps. A step row is keyed (run, number): the idempotency key that makes a
// retried or recovered job unable to record — and so to execute — step N twice. The
// run's step counter moves in the same statement, guarded by the lease; its token and
// cost totals move with the usage ledger (money/ledger.ts), which counts every call.
import { batchRows, grouped } from "../../../db/group-commit.ts";
import { type Db, hotQuery } from "../../../db/prisma.ts";
import { Prisma } from "../../../generated/prisma/client.ts";
import { newId } from "../../../lib/ids.ts";
import { storable, storableJson } from "../../../lib/text.ts";
import type { Emitted } from "../../registry/types.ts";
import { type MaskCounts, maskDeep, maskText } from "./secret-masking.ts";

/** What a step keeps of its prompt, enough to rebuild it exactly (prompt/step-prompt.ts). */
export interface PromptFacts {
  /** Of the messages as sent (masked; llm.ts): `fingerprint`. */
  hash: string;
  budget: number;
  json?: true;
  feedback?: string;
  /** The page the call was about, when no earlier step's row holds it (an action's result, a resumed run's first read). */
  page?: { path: string; markdown: string };
  /** Of the tools' names, in order (step-prompt.ts `toolsHash`); none in JSON mode. */
  tools?: string;
}

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
  /** Secrets masked out of the model call this step records (llm.ts); kept in `detail`. */
  masked?: MaskCounts;
  /** What the model wrote beside its tool call: its reasoning, when it gives one. */
  modelText?: string;
  /** What rebuilding the step's prompt needs beyond the rows (step-prompt.ts); kept in `detail`. */
  prompt?: PromptFacts;
  /** The model that answered, when a fallback did (runtime/fallback.ts); kept in `detail`. */
  model?: string;
  /** The reply's tool calls beyond the first, which were not run (prompt/tool-calls.ts); kept in `detail`. */
  unrun?: string[];
  /** Where its prompt's log showed pages whole from (prompt/page-log.ts): the next prompt's start; kept in `detail`. */
  logFrom?: number;
}

/**
 * A batch's rows, as the `input` CTE of a statement that records steps: `i` (the row's
 * place in the batch), `run_id`, `tenant_id`, these step columns, and the statement's own.
 */
export const STEP_COLUMNS = Prisma.raw(
  "has_step boolean, step_owner text, step_id text, step_number int, step_type text, step_path text, step_detail jsonb, step_input_tokens int, step_output_tokens int, step_llm_ms int, step_duration_ms int, step_model_text text",
);

/** A row's step columns: the step, and who records it (null: the owner answering a waiting run). */
export function stepColumns(owner: string | null, record: StepRecord | undefined) {
  if (!record) return { has_step: false };
  return {
    has_step: true,
    step_owner: owner,
    step_id: newId(),
    step_number: record.number,
    step_type: record.type,
    // A record of what the model sent, which may hold text Postgres refuses (an action's
    // params, which the registry refused for that reason): kept, the bad characters marked.
    // Stored masked too: the run page shows what the model saw, and a key pasted into a
    // note by mistake goes away with the note instead of living on in its runs.
    step_path: record.path === undefined ? null : storable(record.path, "\ufffd"),
    step_detail: storableJson(
      maskDeep({
        ...record.detail,
        ...(record.masked && { masked: record.masked }),
        ...(record.prompt && { prompt: record.prompt }),
        ...(record.model && { model: record.model }),
        ...(record.unrun && { unrun: record.unrun }),
        ...(record.logFrom !== undefined && { logFrom: record.logFrom }),
      }),
    ),
    step_input_tokens: record.inputTokens ?? 0,
    step_output_tokens: record.outputTokens ?? 0,
    step_llm_ms: Math.round(record.llmMs ?? 0),
    step_duration_ms: Math.round(record.durationMs ?? 0),
    step_model_text: record.modelText ? storable(maskText(record.modelText), "\ufffd") : null,
  };
}

/**
 * CTEs over `input`: `cur` locks each row's run and says whether its step may be recorded
 * (this worker holds the lease, or no worker does for an owner's answer, and N-1 is the
 * run's last step); `gate` is the runs that may; `step` inserts their steps, so it has a
 * row exactly for each step recorded. The caller's UPDATE moves `steps_count` for `gate`.
 * Runs are locked in id order, as the heartbeat locks them, so two batches, or a batch and
 * a heartbeat, never deadlock.
 */
export const stepGateSql = Prisma.sql`cur AS (
      SELECT r.id, input.i, (input.has_step AND r.steps_count = input.step_number - 1 AND (input.step_owner IS NULL
        OR (r.lease_owner = input.step_owner AND r.status = 'running'))) AS advance
      FROM input JOIN subagent_task_runs r ON r.id = input.run_id
      ORDER BY r.id FOR UPDATE OF r
    ), gate AS (
      SELECT cur.id, cur.i FROM cur WHERE cur.advance
    ), step AS (
      INSERT INTO subagent_task_run_steps
        (id, run_id, tenant_id, number, type, path, detail, input_tokens, output_tokens, llm_ms, duration_ms,
         model_text, created_at)
      SELECT input.step_id, gate.id, input.tenant_id, input.step_number, input.step_type, input.step_path,
             input.step_detail, input.step_input_tokens, input.step_output_tokens, input.step_llm_ms,
             input.step_duration_ms, input.step_model_text, clock_timestamp()
      FROM gate JOIN input ON input.i = gate.i
      RETURNING run_id
    )`;

/** Over `input` and `step` (stepGateSql): whether the row's step was recorded. */
export const steppedSql = Prisma.sql`EXISTS (SELECT 1 FROM step WHERE step.run_id = input.run_id)`;

interface StepItem {
  run: { id: string; tenantId: string };
  owner: string | null;
  s: StepRecord;
}

/** Records a batch of steps of distinct runs in one statement; says which were recorded. */
async function writeSteps(db: Db, items: StepItem[]): Promise<boolean[]> {
  const input = items.map((stepItem, index) => ({
    i: index,
    run_id: stepItem.run.id,
    tenant_id: stepItem.run.tenantId,
    ...stepColumns(stepItem.owner, stepItem.s),
  }));
  const rows = await hotQuery<{ i: number; stepped: boolean }>(
    db,
    Prisma.sql`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb)
        AS x(i int, run_id text, tenant_id text, ${STEP_COLUMNS}) ${batchRows(input.length)}
    ), ${stepGateSql}, run AS (
      UPDATE subagent_task_runs r SET steps_count = input.step_number
      FROM gate JOIN input ON input.i = gate.i WHERE r.id = gate.id
      RETURNING r.id
    )
    SELECT input.i, ${steppedSql} AS stepped FROM input`,
    { groupCommit: true },
  );
  const stepped = new Map(rows.map((r) => [Number(r.i), r.stepped]));
  return items.map((_, i) => stepped.get(i) === true);
}

// A worker's steps go out in groups; a transaction's, as it makes them.
const writeStep = grouped<StepItem, boolean>({ write: writeSteps, key: (item) => item.run.id });

export async function recordStep(
  tx: Db,
  run: { id: string; tenantId: string },
  owner: string | null,
  stepRecord: StepRecord,
) {
  if (!(await writeStep(tx, { run, owner, s: stepRecord }))) throw new LeaseLostError();
}

/** What an action step created or changed, for the run page. SQL, not `createMany`, which Prisma compiles on every call. */
export async function recordResources(
  tx: Db,
  run: { id: string; tenantId: string },
  step: number,
  path: string,
  emitted: Emitted[],
) {
  if (!emitted.length) return;
  const input = emitted.map((event) => ({
    id: newId(),
    type: event.subjectType,
    resource: event.subjectId,
    action: event.type,
  }));
  await hotQuery(
    tx,
    Prisma.sql`
    INSERT INTO subagent_task_run_resources (id, run_id, tenant_id, step_number, resource_type, resource_id, action, path)
    SELECT x.id, ${run.id}, ${run.tenantId}, ${step}::int, x.type, x.resource, x.action, ${storable(path, "\ufffd")}
    FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS x(id text, type text, resource text, action text)`,
  );
}
