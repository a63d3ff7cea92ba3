// Grading a run against a test case's expectations (agents/core/grading.ts): every kind, on a
// live run's steps and on a dry run's (ok, with the policy's decision beside).
import { describe, expect, it } from "vitest";
import {
  type Expectation,
  expectationsSchema,
  expectationWords,
  rubricKey,
} from "../src/services/agents/core/expectations.ts";
import { grade, gradeLine, type RunOutcome } from "../src/services/agents/core/grading.ts";
import { parseVerdict } from "../src/services/agents/runtime/grader-prompt.ts";

const execute = (action: string, params: Record<string, unknown>, extra: Record<string, unknown>) => ({
  type: "execute",
  detail: { action, params, ...extra },
});

/** A finished live run: it read a page, commented, was refused a delete, finished. */
const live: RunOutcome = {
  status: "completed",
  stopReason: "finished",
  finalMessage: "Done: thanked the team.",
  stepsCount: 4,
  costMicros: 12_000n,
  disclosureHolds: 0,
  steps: [
    { type: "navigate", detail: { ok: true } },
    execute("create_comment", { body: "Thanks, all!", note: "n1" }, { ok: true }),
    execute("delete_note", { note: "n1" }, { ok: false, error: "not allowed" }),
    { type: "finish", detail: { message: "Done: thanked the team." } },
  ],
};

/** The same as a dry run: nothing executed, each write with the decision it would have had. */
const dry = (decision: string): RunOutcome => ({
  ...live,
  steps: [
    { type: "navigate", detail: { ok: true } },
    execute("create_comment", { body: "Thanks, all!" }, { ok: true, dry: { decision } }),
    execute("delete_note", { note: "n1" }, { ok: true, dry: { decision: "refused", rule: "no deletes" } }),
    { type: "finish", detail: { message: "Done" } },
  ],
});

const takes = (action: string, params: Record<string, string> = {}, must = true): Expectation => ({
  kind: "action",
  must,
  action,
  params,
});

const passes = (outcome: RunOutcome, expectation: Expectation) => grade(outcome, [expectation])[0]!;

describe("actions", () => {
  it("a live run takes an action that went through, with every param pattern found; a refused one is not taken", () => {
    expect(passes(live, takes("create_comment", { body: "(?i)thanks" }))).toMatchObject({
      passed: true,
      why: "took `create_comment` at step 2",
    });
    expect(passes(live, takes("create_comment", { body: "(?i)thanks", note: "^n2$" })).passed).toBe(false);
    expect(passes(live, takes("delete_note"))).toMatchObject({
      passed: false,
      why: "never took `delete_note` as expected (refused at step 3)",
    });
    expect(passes(live, takes("delete_note", {}, false))).toMatchObject({
      passed: true,
      why: "never took `delete_note` (refused at step 3)",
    });
    expect(passes(live, takes("create_comment", {}, false))).toMatchObject({
      passed: false,
      why: "took `create_comment` at step 2",
    });
  });

  it("a dry run takes what the policy would allow or hold, never what it would refuse", () => {
    for (const decision of ["allowed", "held", "disclosure"])
      expect(passes(dry(decision), takes("create_comment", { body: "(?i)thanks" })).passed).toBe(true);
    expect(passes(dry("refused"), takes("create_comment")).passed).toBe(false);
    expect(passes(dry("allowed"), takes("delete_note")).passed).toBe(false);
    expect(passes(dry("allowed"), takes("delete_note", {}, false)).passed).toBe(true);
  });

  it("a connected tool's call is its tool's name; a param that is not text is matched as JSON", () => {
    const outcome = { ...live, steps: [execute("docs__search", { query: { words: ["q3"] } }, { ok: true })] };
    expect(passes(outcome, takes("docs__search", { query: '"q3"' })).passed).toBe(true);
    expect(passes(outcome, takes("docs__search", { missing: "." })).passed).toBe(false);
  });
});

describe("the rest", () => {
  it("finishes, at most N steps, at most $X, no disclosure hold", () => {
    expect(passes(live, { kind: "finishes" })).toMatchObject({ passed: true, why: "it finished" });
    const waiting = { ...live, status: "waiting", stopReason: "awaiting_approval" };
    expect(passes(waiting, { kind: "finishes" })).toMatchObject({
      passed: false,
      why: "it ended waiting (awaiting_approval)",
    });
    expect(passes(live, { kind: "max_steps", steps: 4 })).toMatchObject({
      passed: true,
      why: "it took 4 steps",
    });
    expect(passes(live, { kind: "max_steps", steps: 3 }).passed).toBe(false);
    expect(passes(live, { kind: "max_cost", usd: 0.012 })).toMatchObject({
      passed: true,
      why: "it cost $0.0120",
    });
    expect(passes(live, { kind: "max_cost", usd: 0.011 }).passed).toBe(false);
    expect(passes(live, { kind: "no_disclosure" })).toMatchObject({ passed: true, why: "none held" });
    expect(passes({ ...live, disclosureHolds: 2 }, { kind: "no_disclosure" })).toMatchObject({
      passed: false,
      why: "2 held for disclosure",
    });
  });

  it("its reply contains or does not contain a text, in any case", () => {
    expect(passes(live, { kind: "reply", contains: true, text: "THANKED" }).passed).toBe(true);
    expect(passes(live, { kind: "reply", contains: false, text: "sorry" }).passed).toBe(true);
    expect(passes(live, { kind: "reply", contains: false, text: "done" }).passed).toBe(false);
    const silent = { ...live, finalMessage: null };
    expect(passes(silent, { kind: "reply", contains: true, text: "done" })).toMatchObject({
      passed: false,
      why: "it gave no reply",
    });
  });

  it("keeps the case's order, one grade each", () => {
    const expectations: Expectation[] = [{ kind: "finishes" }, takes("delete_note", {}, false)];
    expect(grade(live, expectations).map((g) => [g.expectation.kind, g.passed])).toEqual([
      ["finishes", true],
      ["action", true],
    ]);
  });
});

describe("a rubric", () => {
  const rubric = { kind: "rubric" as const, text: "Polite.", model: "gpt-4.1-mini", pass_at: 7 };
  const withGrade = (status: string, score: number | null, error: string | null = null): RunOutcome => ({
    ...live,
    rubrics: new Map([
      [rubricKey(rubric), { status, score, reason: "It *thanks* them.", error, costMicros: 10n }],
    ]),
  });

  it("passes at its mark, shows the score and the reason escaped, and waits while it is graded", () => {
    expect(grade(withGrade("graded", 7), [rubric])[0]).toMatchObject({
      passed: true,
      why: "scored 7/10: It \\*thanks\\* them.",
    });
    expect(grade(withGrade("graded", 6), [rubric])[0]!.passed).toBe(false);
    const waiting = grade(live, [rubric])[0]!;
    expect(waiting).toMatchObject({ passed: false, pending: true, why: "being graded" });
    expect(gradeLine(waiting)).toMatch(/^… Graded by `gpt-4.1-mini` at 7\/10 or more/);
    expect(
      grade(withGrade("failed", null, "its model could not be called (auth)"), [rubric])[0],
    ).toMatchObject({
      passed: false,
      why: "not graded: its model could not be called \\(auth\\)",
    });
  });

  it("is keyed by its words and model, not its mark", () => {
    expect(rubricKey({ ...rubric })).toBe(rubricKey({ ...rubric, pass_at: 9 } as typeof rubric));
    expect(rubricKey(rubric)).not.toBe(rubricKey({ ...rubric, model: "gpt-5" }));
  });

  it("reads a grader's answer as a whole score from 0 to 10 with a reason, or as none", () => {
    expect(parseVerdict('{"score": 8, "reason": " Fine. "}')).toEqual({ score: 8, reason: "Fine." });
    expect(parseVerdict('Here you go:\n```json\n{"score": 0}\n```')).toEqual({ score: 0, reason: "" });
    for (const bad of ['{"score": 11}', '{"score": 7.5}', '{"score": "9"}', "nine", "", null])
      expect(parseVerdict(bad)).toBeNull();
  });
});

describe("expectations", () => {
  it("say what they expect in words", () => {
    const words = expectationsSchema
      .parse([
        takes("create_comment", { body: "thanks" }),
        takes("delete_note", {}, false),
        { kind: "finishes" },
        { kind: "max_steps", steps: 6 },
        { kind: "max_cost", usd: 0.05 },
        { kind: "no_disclosure" },
        { kind: "reply", contains: true, text: "done" },
        { kind: "reply", contains: false, text: "sorry" },
      ])
      .map(expectationWords);
    expect(words).toEqual([
      "Takes `create_comment` with body ~ `/thanks/`",
      "Never takes `delete_note`",
      "Finishes",
      "At most 6 steps",
      "Costs at most $0.05",
      "No disclosure hold",
      "Its reply contains “done”",
      "Its reply does not contain “sorry”",
    ]);
  });

  it("refuse a pattern RE2 cannot run", () => {
    const parsed = expectationsSchema.safeParse([takes("create_comment", { body: "(a)\\1" })]);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toContain("backreferences");
  });
});
