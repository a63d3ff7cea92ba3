// An agent's test cases as its managers see them: each case's trigger, its expectations in
// words, the run it was saved from and how that run grades against them; edit and delete
// beside. Managers only (loadAgent): a case quotes its run's task and names what it read.
import { NotFoundError } from "../../lib/errors.ts";
import { EXPECTATION_FIELDS, expectationValues } from "../actions/test-cases.ts";
import { expectationWords, storedExpectations } from "../agents/core/expectations.ts";
import { type Grade, gradeLine, grade as gradeRun, runOutcome } from "../agents/core/grading.ts";
import { loadAgent } from "../agents/core/ownership.ts";
import { agentConfig } from "../agents/core/settings.ts";
import { type CaseRow, casePath, casesPath, listCases, loadCase } from "../agents/core/test-cases.ts";
import { parseLabel } from "../registry/audiences.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage } from "../registry/types.ts";
import { agentCrumbs, excerpt, pager, paging, when } from "./format.ts";

const madeBy = (row: CaseRow) =>
  `saved ${when(row.createdAt)}${row.createdBy ? ` by ${mdEscape(row.createdBy.name)} (@${row.createdBy.handle})` : ""}`;

const runLink = (handle: string, runId: string | null) =>
  runId ? link(`run ${runId}`, `/subagents/${handle}/runs/${runId}`) : "a run since deleted";

const deleteForm = (id: string, label: string): Block => ({
  form: { action: "delete_test_case", fixed: { case: id }, label },
});

function caseBlocks(handle: string, row: CaseRow): Block[] {
  const count = storedExpectations(row.expectations).length;
  return [
    {
      md: [
        `### ${link(row.name, casePath(handle, row.id))}`,
        "",
        `${madeBy(row)} · from ${runLink(handle, row.fromRunId)} · ${row.triggerKind} · ${count} expectation${count === 1 ? "" : "s"}`,
        "",
        quote(excerpt(row.task, 200)),
      ].join("\n"),
    },
    deleteForm(row.id, `Delete “${row.name}”`),
  ];
}

export const testCasesPage = definePage({
  pattern: "/subagents/:handle/cases",
  actions: ["delete_test_case"],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  async render(ctx, scope, query) {
    const agent = scope.agent;
    const paged = paging(query);
    const { cases, total } = await listCases(ctx.db, agent.id, paged.skip, paged.take);
    return {
      title: `Test cases of ${agent.name}`,
      breadcrumb: [...agentCrumbs(agent), { label: "Test cases" }],
      blocks: [
        {
          md: `A test case is a run's trigger kept to be run again — its task, how it woke, whose view it acted within — with what a run of it must do. Save one with **Save as a test case** on any of ${mdEscape(agent.name)}'s runs.`,
        },
        { md: `## Test cases (${total})` },
        ...(cases.length
          ? cases.flatMap((row) => caseBlocks(agent.handle, row))
          : [{ md: "_No test cases yet._" }]),
        { md: pager(casesPath(agent.handle), paged, total) },
      ],
      // Each case quotes its run's task: a reader's label narrows by every case's.
      sources: cases.flatMap((row) => parseLabel(row.label)),
    };
  },
});

/** How the run it was saved from grades against it now, or null when that run is gone. */
async function originalGrades(ctx: Ctx, row: CaseRow): Promise<Grade[] | null> {
  const outcome = row.fromRunId ? await runOutcome(ctx.db, row.fromRunId) : null;
  return outcome ? gradeRun(outcome, storedExpectations(row.expectations)) : null;
}

function triggerBlock(row: CaseRow, viewers: string[]): string {
  const view = viewers.length
    ? `acting within ${viewers.map((handle) => `@${handle}`).join(" and ")}'s view`
    : "acting within its managers' view";
  return `## Trigger\n\n${row.triggerKind} · ${view}\n\n${quote(row.task)}`;
}

function gradesBlock(handle: string, row: CaseRow, grades: Grade[] | null): string {
  if (!grades) return "## The run it was saved from\n\n_That run has been deleted._";
  const passed = grades.filter((graded) => graded.passed).length;
  const grading = grades.some((graded) => graded.pending)
    ? " Its rubric is being graded: reload to see its score."
    : "";
  return [
    `## The run it was saved from\n\n${runLink(handle, row.fromRunId)}: passes ${passed} of ${grades.length}.${grading}`,
    "",
    ...grades.map((graded) => `- ${gradeLine(graded)}`),
  ].join("\n");
}

export const testCasePage = definePage({
  pattern: "/subagents/:handle/cases/:case",
  actions: ["update_test_case_expectations", "delete_test_case"],
  async resolve(ctx, params) {
    const agent = await loadAgent(ctx, params.handle);
    const found = /^[a-z0-9]{6,32}$/.test(params.case) ? await loadCase(ctx.db, agent.id, params.case) : null;
    if (!found) throw new NotFoundError(`No test case ${params.case} of @${agent.handle}`);
    return { agent, testCase: found };
  },
  async render(ctx, scope) {
    const { agent, testCase: row } = scope;
    const expectations = storedExpectations(row.expectations);
    const [grades, viewers] = await Promise.all([
      originalGrades(ctx, row),
      row.viewerIds.length
        ? ctx.db.user.findMany({ where: { id: { in: row.viewerIds } }, select: { handle: true } })
        : [],
    ]);
    return {
      title: `Test case “${row.name}” of ${agent.name}`,
      breadcrumb: [
        ...agentCrumbs(agent),
        { label: "Test cases", path: casesPath(agent.handle) },
        { label: row.name },
      ],
      blocks: [
        { md: `${madeBy(row)} · from ${runLink(agent.handle, row.fromRunId)}` },
        {
          md: triggerBlock(
            row,
            viewers.map((viewer) => viewer.handle),
          ),
        },
        {
          md: [
            `## Expectations (${expectations.length})`,
            "",
            ...expectations.map((expectation) => `- ${expectationWords(expectation)}`),
          ].join("\n"),
        },
        { md: gradesBlock(agent.handle, row, grades) },
        {
          form: {
            action: "update_test_case_expectations",
            fixed: { case: row.id },
            label: "Save expectations",
            style: "folded",
            fields: EXPECTATION_FIELDS,
            values: { rubric_model: agentConfig(agent).model, ...expectationValues(expectations) },
          },
        },
        deleteForm(row.id, "Delete this test case"),
      ],
      // It quotes its run's task: a reader's label narrows by the run's.
      sources: parseLabel(row.label),
    };
  },
});
