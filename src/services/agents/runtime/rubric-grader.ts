// Graded expectations: a run judged against a test case's rubric by the model the case names,
// in a call of its own — its own prompt, no tools, the run's task, actions and reply quoted as
// data (other people's words retold by the agent: never instructions to the grader). The score
// and reason are kept per run and rubric (agent_rubric_grades); the call is charged to the agent
// as any of its calls (ledger.ts, with no run: the run's own cost stays what the agent spent, so
// "costs at most" grades the agent, not its grader) and counts in its experiment's cap.
// Jobs come from the events a run's end and a case's save write (jobs/process-event.ts).
import type { PrismaClient } from "../../../db/prisma.ts";
import { newId } from "../../../lib/ids.ts";
import { DecryptError } from "../../../lib/secrets.ts";
import { type Endpoint, endpointFor, KeyUnavailableError } from "../../money/keys.ts";
import { recordUsage } from "../../money/ledger.ts";
import { priceCall } from "../../money/pricing.ts";
import { type RubricExpectation, rubricKey, storedExpectations } from "../core/expectations.ts";
import { experimentStop } from "../core/experiments.ts";
import { TERMINAL } from "../core/runs.ts";
import { agentConfig, tenantSettings } from "../core/settings.ts";
import { graderPrompt, parseVerdict } from "./grader-prompt.ts";
import { apiOf, encodePrompt, type LlmClient, LlmError } from "./llm.ts";

export interface GraderDeps {
  prisma: PrismaClient;
  llm: LlmClient;
  /** The server's endpoint (LLM_BASE_URL), for an agent without a key of its own. */
  shared: Endpoint | null;
}

/** What one job asks: grade this run against this case's rubrics (those not graded yet). */
export interface GradeJob {
  runId: string;
  caseId: string;
  /** The job's last try: a model still unavailable now is a failed grade, not another try. */
  lastTry?: boolean;
}

/** A claim older than this is a worker that died mid-call: another may take it. */
const STALE_CLAIM_MINUTES = 15;
/** The most a grader call may take, retries and all. */
const CALL_MS = 5 * 60_000;
/** The model was out of reach: worth another try of the job (BullMQ's backoff). */
const PASSING: LlmError["kind"][] = ["rate_limited", "server", "network", "timeout"];

type Loaded = NonNullable<Awaited<ReturnType<typeof load>>>;

async function load(prisma: PrismaClient, job: GradeJob) {
  const run = await prisma.subagentTaskRun.findUnique({
    where: { id: job.runId },
    include: { agent: true, tenant: true },
  });
  if (!run || !TERMINAL.includes(run.status)) return null;
  const testCase = await prisma.agentTestCase.findFirst({ where: { id: job.caseId, agentId: run.agentId } });
  if (!testCase) return null;
  // One grade per rubric key: the same words and model twice in a case are one call. A grade
  // already made, or being made by another worker, is skipped when it is claimed.
  const byKey = new Map(
    storedExpectations(testCase.expectations)
      .filter((e): e is RubricExpectation => e.kind === "rubric")
      .map((rubric) => [rubricKey(rubric), rubric]),
  );
  return { run, rubrics: [...byKey.values()] };
}

/** Grades a run against its case's rubrics not graded yet; how many it graded. */
export async function gradeRun(deps: GraderDeps, job: GradeJob): Promise<number> {
  const loaded = await load(deps.prisma, job);
  if (!loaded?.rubrics.length) return 0;
  const steps = await deps.prisma.subagentTaskRunStep.findMany({
    where: { runId: loaded.run.id },
    orderBy: { number: "asc" },
    select: { number: true, type: true, detail: true },
  });
  let graded = 0;
  for (const rubric of loaded.rubrics) {
    const id = await claim(deps.prisma, loaded, rubric);
    if (!id) continue;
    const outcome = await gradeOne(deps, loaded, rubric, steps, job);
    await settle(deps.prisma, loaded, rubric, id, outcome);
    if (outcome.status === "graded") graded++;
  }
  return graded;
}

/** The grade's row, claimed for this worker; null when it is graded or another worker has it. */
async function claim(prisma: PrismaClient, { run }: Loaded, rubric: RubricExpectation) {
  const [row] = await prisma.$queryRaw<{ id: string }[]>`
    INSERT INTO agent_rubric_grades (id, tenant_id, agent_id, run_id, experiment_id, key, model, status)
    VALUES (${newId()}, ${run.tenantId}, ${run.agentId}, ${run.id}, ${run.experimentId}, ${rubricKey(rubric)},
      ${rubric.model}, 'grading')
    ON CONFLICT (run_id, key) DO UPDATE SET status = 'grading', claimed_at = now(), error = NULL
    WHERE agent_rubric_grades.status <> 'graded'
      AND (agent_rubric_grades.status <> 'grading'
        OR agent_rubric_grades.claimed_at < now() - make_interval(mins => ${STALE_CLAIM_MINUTES}))
    RETURNING id`;
  return row?.id ?? null;
}

type Outcome =
  | { status: "graded" | "failed"; score?: number; reason?: string; error?: string; spent?: Spent }
  | { status: "skipped"; error: string };

interface Spent {
  endpoint: Endpoint;
  usage: { input: number; cached: number; output: number; cacheWrite?: number };
  latencyMs: number;
}

/** Why no call may be made for it now, in words: its experiment stopped, agents off, its agent paused. */
async function notNow(prisma: PrismaClient, { run }: Loaded): Promise<string | null> {
  if (!tenantSettings(run.tenant).agents_enabled) return "agents are switched off in this workspace";
  if (run.agent.pausedAt) return `@${run.agent.handle} is paused`;
  if (!run.experimentId) return null;
  const stop = await experimentStop(prisma, run.experimentId);
  return stop && `its experiment stopped: ${stop}`;
}

async function endpointOf(deps: GraderDeps, { run }: Loaded): Promise<Endpoint | string> {
  try {
    const endpoint = await endpointFor(
      deps.prisma,
      run.agent,
      agentConfig(run.agent).api_key_id,
      deps.shared,
    );
    return endpoint ?? "no model endpoint is set up for this agent";
  } catch (err) {
    if (err instanceof KeyUnavailableError) return err.message;
    if (err instanceof DecryptError) return "this agent's API key cannot be decrypted: add it again";
    throw err;
  }
}

async function gradeOne(
  deps: GraderDeps,
  loaded: Loaded,
  rubric: RubricExpectation,
  steps: { number: number; type: string; detail: unknown }[],
  job: GradeJob,
): Promise<Outcome> {
  const stop = await notNow(deps.prisma, loaded);
  if (stop) return { status: "skipped", error: stop };
  const endpoint = await endpointOf(deps, loaded);
  if (typeof endpoint === "string") return { status: "failed", error: endpoint };
  const prompt = encodePrompt(graderPrompt(rubric, loaded.run, steps), apiOf(endpoint));
  try {
    const reply = await deps.llm(endpoint, { prompt, signal: AbortSignal.timeout(CALL_MS) });
    const spent = { endpoint, usage: reply.usage, latencyMs: reply.latencyMs };
    const verdict = parseVerdict(reply.message.content);
    if (!verdict)
      return { status: "failed", error: "the grader's answer was not a score from 0 to 10", spent };
    return { status: "graded", ...verdict, spent };
  } catch (err) {
    if (!(err instanceof LlmError)) throw err;
    if (PASSING.includes(err.kind) && !job.lastTry) {
      // Let go of it, so the job's next try claims it again at once.
      await release(deps.prisma, loaded, rubric);
      throw err;
    }
    return { status: "failed", error: `its model could not be called (${err.kind.replace("_", " ")})` };
  }
}

async function release(prisma: PrismaClient, { run }: Loaded, rubric: RubricExpectation) {
  await prisma.agentRubricGrade.updateMany({
    where: { runId: run.id, key: rubricKey(rubric), status: "grading" },
    data: { claimedAt: new Date(0) },
  });
}

/** The grade and its call's charge, in one transaction: a call charged is a call kept. */
async function settle(
  prisma: PrismaClient,
  { run }: Loaded,
  rubric: RubricExpectation,
  id: string,
  outcome: Outcome,
) {
  const spent = "spent" in outcome ? outcome.spent : undefined;
  const price = spent && priceCall(rubric.model, spent.usage, tenantSettings(run.tenant).pricing);
  await prisma.$transaction(async (tx) => {
    if (spent && price)
      await recordUsage(tx, {
        tenantId: run.tenantId,
        agentId: run.agentId,
        ownerId: run.agent.parentId,
        runId: null,
        stepNumber: 0,
        apiKeyId: spent.endpoint.keyId ?? null,
        model: rubric.model,
        usage: spent.usage,
        latencyMs: spent.latencyMs,
        price,
      });
    await tx.agentRubricGrade.update({
      where: { id },
      data: {
        status: outcome.status,
        score: "score" in outcome ? (outcome.score ?? null) : null,
        reason: "reason" in outcome ? (outcome.reason ?? null) : null,
        error: outcome.error ?? null,
        inputTokens: spent?.usage.input ?? 0,
        outputTokens: spent?.usage.output ?? 0,
        costMicros: BigInt(price?.costMicros ?? 0),
        gradedAt: new Date(),
      },
    });
  });
}

const CASE_EDITS = ["subagent.test_case_saved", "subagent.test_case_updated"];

const hasRubric = (expectations: unknown) =>
  storedExpectations(expectations).some((e) => e.kind === "rubric");

/**
 * The grading an event asks for, or null: an experiment's run that ended is graded against its
 * case, and a case saved or edited with a rubric grades the run it was saved from (so its page
 * shows how the rubric judges a run its managers know).
 */
export async function gradingFor(
  prisma: PrismaClient,
  event: { type: string; subjectId: string; payload: unknown },
): Promise<GradeJob | null> {
  if (event.type.startsWith("run.") && TERMINAL.includes(event.type.slice(4) as never)) {
    const run = await prisma.subagentTaskRun.findUnique({
      where: { id: event.subjectId },
      select: { experimentId: true, testCase: { select: { id: true, expectations: true } } },
    });
    if (!run?.experimentId || !run.testCase || !hasRubric(run.testCase.expectations)) return null;
    return { runId: event.subjectId, caseId: run.testCase.id };
  }
  if (!CASE_EDITS.includes(event.type)) return null;
  const caseId = (event.payload as { case?: unknown } | null)?.case;
  if (typeof caseId !== "string") return null;
  const testCase = await prisma.agentTestCase.findFirst({
    where: { id: caseId, agentId: event.subjectId },
    select: { fromRunId: true, expectations: true },
  });
  if (!testCase?.fromRunId || !hasRubric(testCase.expectations)) return null;
  return { runId: testCase.fromRunId, caseId };
}
