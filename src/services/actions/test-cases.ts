// "Save as a test case" on a run's page, and editing or deleting a case on its own page
// (agents/core/test-cases.ts). Only the agent's managers, through the one owner check; each
// write is one transaction with its audit event. The form is plain fields a browser and the
// markdown API send alike: lines of actions, checkboxes, numbers, lines of reply text.
import { z } from "zod";
import { NotFoundError, ValidationError } from "../../lib/errors.ts";
import {
  type ActionExpectation,
  type Expectation,
  expectationsSchema,
  MAX_EXPECTATIONS,
  RUBRIC_CHARS,
  RUBRIC_PASS_AT,
} from "../agents/core/expectations.ts";
import { TERMINAL } from "../agents/core/runs.ts";
import { casePath, casesPath, deleteCase, saveCase, setExpectations } from "../agents/core/test-cases.ts";
import { isToolName } from "../agents/core/tool-names.ts";
import { emit } from "../events.ts";
import { assertInCatalogue } from "../money/catalogue.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { type ActionCtx, type Ctx, defineAction, type Scope } from "../registry/types.ts";
import { idSchema, optionalText, text } from "../validation.ts";
import { parsePatterns } from "./agent-settings.ts";
import { managersOnly } from "./managers-only.ts";

const onlyManagers = managersOnly("keep its test cases");

const lines = (max: number, label: string, description: string) =>
  z.string().max(max, `at most ${max} characters`).meta({ multiline: true, label, description }).optional();

/** What a case expects, as a form's fields: save_test_case and update_test_case_expectations share them. */
const expectationFields = {
  must_take: lines(
    4000,
    "Actions it must take",
    "one per line: an action (or connected tool), then optional param=regex (RE2) its params must match, e.g. add_comment text=(?i)thanks",
  ),
  must_not_take: lines(4000, "Actions it must never take", "one per line, as above: e.g. create_note"),
  must_finish: z.boolean().default(true).meta({ label: "Must finish" }),
  max_steps: z
    .number()
    .int("a whole number")
    .min(1, "at least 1")
    .max(10_000, "at most 10000")
    .optional()
    .meta({ label: "At most this many steps" }),
  max_cost_usd: z
    .number()
    .min(0, "at least 0")
    .max(100_000, "at most 100000")
    .optional()
    .meta({ label: "Costs at most (USD)" }),
  no_disclosure: z.boolean().default(false).meta({ label: "No disclosure hold" }),
  reply_contains: lines(
    4000,
    "Its reply contains",
    "one text per line, found in its final message (any case)",
  ),
  reply_lacks: lines(4000, "Its reply does not contain", "one text per line, never in its final message"),
  rubric: lines(
    RUBRIC_CHARS,
    "Rubric, graded by a model",
    "what a good run does, in words; a model scores each run of the case from 0 to 10 against it, in a call of its own (charged to the agent)",
  ),
  rubric_model: optionalText(200, "the model that grades the rubric, from the workspace's catalogue").meta({
    label: "Grader model",
  }),
  rubric_pass_at: z
    .number()
    .int("a whole number")
    .min(1, "at least 1")
    .max(10, "at most 10")
    .default(RUBRIC_PASS_AT)
    .meta({ label: "Passes at (out of 10)" }),
};

/** The fields a form of a case's expectations shows (the pages' forms list them: registry/page-html.ts). */
export const EXPECTATION_FIELDS = Object.keys(expectationFields);

type ExpectationParams = z.infer<z.ZodObject<typeof expectationFields>>;

/** A case is one of the page's agent's: named by id, read within it, so another's is no case here. */
const caseId = idSchema.meta({ label: "Test case", pickedBeside: true });

/** A pattern that runs into the next param's name is split there: `\s` writes a space before `word=`. */
const PARAM_START = /\s+(?=[A-Za-z0-9_-]{1,64}=)/;

/**
 * `action param=regex …` lines → action expectations: each action one this workspace has (or a
 * connected tool's name), each param one of its own and each pattern one RE2 runs (parsePatterns,
 * as a rule's), so a case that could never match what it names is a 400 when it is saved.
 */
function actionLines(ctx: ActionCtx, value: string | undefined, must: boolean, field: string) {
  const out: ActionExpectation[] = [];
  const bad = (line: number, message: string) =>
    new ValidationError([{ field, message: `line ${line}: ${message}` }]);
  for (const [index, raw] of (value ?? "").split(/\r\n|\r|\n/).entries()) {
    const line = raw.trim();
    if (!line) continue;
    const [action = "", ...params] = line.split(PARAM_START);
    if (!ctx.actionDefs.has(action) && !isToolName(action))
      throw bad(index + 1, `no action or connected tool is called “${action}”`);
    try {
      out.push({
        kind: "action",
        must,
        action,
        params: parsePatterns(ctx, action, params.join("\n"), field),
      });
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      throw bad(index + 1, err.issues.map((issue) => issue.message.replace(/^line \d+: /, "")).join("; "));
    }
  }
  return out;
}

const replyLines = (value: string | undefined, contains: boolean): Expectation[] =>
  (value ?? "")
    .split(/\r\n|\r|\n/)
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => ({ kind: "reply", contains, text: line.slice(0, 500) }));

/** The rubric, graded by a model the workspace offers; none when its words are blank (a model alone is the form's default). */
async function rubricOf(ctx: ActionCtx, params: ExpectationParams): Promise<Expectation[]> {
  const text = params.rubric?.trim();
  if (!text) return [];
  const model = params.rubric_model?.trim();
  if (!model)
    throw new ValidationError([
      { field: "rubric_model", label: "Grader model", message: "name the model that grades the rubric" },
    ]);
  await assertInCatalogue(ctx.tx, ctx.tenant, { name: "rubric_model", label: "Grader model" }, [model]);
  return [{ kind: "rubric", text, model, pass_at: params.rubric_pass_at }];
}

/** The form's fields as the list of expectations a case keeps, checked. */
async function expectationsFrom(ctx: ActionCtx, params: ExpectationParams): Promise<Expectation[]> {
  const expectations: Expectation[] = [
    ...actionLines(ctx, params.must_take, true, "must_take"),
    ...actionLines(ctx, params.must_not_take, false, "must_not_take"),
    ...(params.must_finish ? [{ kind: "finishes" as const }] : []),
    ...(params.max_steps !== undefined ? [{ kind: "max_steps" as const, steps: params.max_steps }] : []),
    ...(params.max_cost_usd !== undefined ? [{ kind: "max_cost" as const, usd: params.max_cost_usd }] : []),
    ...(params.no_disclosure ? [{ kind: "no_disclosure" as const }] : []),
    ...replyLines(params.reply_contains, true),
    ...replyLines(params.reply_lacks, false),
    ...(await rubricOf(ctx, params)),
  ];
  if (!expectations.length)
    throw new ValidationError([{ field: "must_finish", message: "a test case expects at least one thing" }]);
  if (expectations.length > MAX_EXPECTATIONS)
    throw new ValidationError([
      {
        field: "must_take",
        message: `at most ${MAX_EXPECTATIONS} expectations in all (${expectations.length} given)`,
      },
    ]);
  return expectationsSchema.parse(expectations);
}

/** `action param=regex` again: a case's action expectations as the lines its form takes. */
const actionLine = (expectation: ActionExpectation) =>
  [expectation.action, ...Object.entries(expectation.params).map(([name, value]) => `${name}=${value}`)].join(
    " ",
  );

/** A case's expectations as its form's values, so editing starts from what it expects now. */
export function expectationValues(expectations: Expectation[]): Record<string, unknown> {
  const actions = (must: boolean) =>
    expectations
      .filter((e): e is ActionExpectation => e.kind === "action" && e.must === must)
      .map(actionLine)
      .join("\n");
  const replies = (contains: boolean) =>
    expectations.flatMap((e) => (e.kind === "reply" && e.contains === contains ? [e.text] : [])).join("\n");
  const find = <Kind extends Expectation["kind"]>(kind: Kind) =>
    expectations.find((e): e is Extract<Expectation, { kind: Kind }> => e.kind === kind);
  const rubric = find("rubric");
  return {
    must_take: actions(true),
    must_not_take: actions(false),
    must_finish: Boolean(find("finishes")),
    max_steps: find("max_steps")?.steps,
    max_cost_usd: find("max_cost")?.usd,
    no_disclosure: Boolean(find("no_disclosure")),
    reply_contains: replies(true),
    reply_lacks: replies(false),
    rubric: rubric?.text ?? "",
    ...(rubric && { rubric_model: rubric.model }),
    rubric_pass_at: rubric?.pass_at ?? RUBRIC_PASS_AT,
  };
}

/** A case is what a run did, whole: saved once the run has ended (a waiting run may still act). */
const endedOnly = (ctx: Ctx, scope: Scope) =>
  onlyManagers(ctx, scope) ??
  (scope.taskRun && !TERMINAL.includes(scope.taskRun.status)
    ? "only a run that has ended can be saved as a test case"
    : null);

export const saveTestCase = defineAction({
  name: "save_test_case",
  needs: ["taskRun", "agent"],
  description:
    "Save this run as a test case of the agent: its trigger (task, how it woke, whose view), and what a run of it must do",
  params: z.object({ name: text(80).meta({ label: "Name" }), ...expectationFields }),
  writes: true,
  audience: toAgentManagers("test case"),
  available: endedOnly,
  async execute(ctx, params, scope) {
    const { agent, taskRun } = scope;
    const expectations = await expectationsFrom(ctx, params);
    const saved = await saveCase(ctx.tx, taskRun, {
      tenantId: ctx.tenant.id,
      agentId: agent.id,
      createdById: ctx.actor.id,
      name: params.name,
      expectations,
    });
    await emit(ctx, {
      type: "subagent.test_case_saved",
      subjectType: "user",
      subjectId: agent.id,
      payload: { case: saved.id, run: taskRun.id, expectations: expectations.length },
    });
    return {
      status: 201,
      location: casePath(agent.handle, saved.id),
      notice: `Saved test case “${params.name}” with ${expectations.length} expectation${expectations.length === 1 ? "" : "s"}`,
    };
  },
});

export const updateTestCaseExpectations = defineAction({
  name: "update_test_case_expectations",
  needs: ["agent"],
  description: "Replace what a test case expects of a run",
  params: z.object({ case: caseId, ...expectationFields }),
  writes: true,
  audience: toAgentManagers("test case"),
  available: onlyManagers,
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const expectations = await expectationsFrom(ctx, params);
    if (!(await setExpectations(ctx.tx, agent.id, params.case, expectations)))
      throw new NotFoundError(`@${agent.handle} has no test case ${params.case}`);
    await emit(ctx, {
      type: "subagent.test_case_updated",
      subjectType: "user",
      subjectId: agent.id,
      payload: { case: params.case, expectations: expectations.length },
    });
    return { status: 200, location: casePath(agent.handle, params.case), notice: "Expectations saved" };
  },
});

export const deleteTestCase = defineAction({
  name: "delete_test_case",
  needs: ["agent"],
  destructive: "The test case and its expectations are gone; the run it was saved from stays.",
  description: "Delete a test case",
  params: z.object({ case: caseId }),
  writes: true,
  audience: toAgentManagers("test case"),
  available: onlyManagers,
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const name = await deleteCase(ctx.tx, agent.id, params.case);
    if (name === null) throw new NotFoundError(`@${agent.handle} has no test case ${params.case}`);
    await emit(ctx, {
      type: "subagent.test_case_deleted",
      subjectType: "user",
      subjectId: agent.id,
      payload: { case: params.case },
    });
    return { status: 200, location: casesPath(agent.handle), notice: `Deleted test case “${name}”` };
  },
});
