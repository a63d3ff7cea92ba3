// What a test case expects of a run (agents/core/test-cases.ts keeps them, grading.ts checks
// them): one shape, read through this schema wherever it is stored or sent, and its words.
import { z } from "zod";
import { sha256 } from "../../../lib/ids.ts";
import { compilePattern } from "../../../lib/rule-pattern.ts";
import { code, mdEscape } from "../../registry/markdown.ts";

/** A param pattern as a rule's (lib/rule-pattern.ts): RE2, so no pattern can stall a grading. */
const pattern = z
  .string()
  .min(1, "must not be empty")
  .max(200, "at most 200 characters")
  .superRefine((value, issues) => {
    try {
      compilePattern(value);
    } catch (err) {
      issues.addIssue({ code: "custom", message: (err as Error).message });
    }
  });

export const RUBRIC_CHARS = 2000;
/** The score out of 10 a rubric passes at unless its case says otherwise. */
export const RUBRIC_PASS_AT = 7;

export const expectationSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("action"),
    /** true: it must take the action; false: it must never. */
    must: z.boolean(),
    action: z.string().min(1).max(200),
    /** Param name → pattern found in its value (as text); every one must match. */
    params: z.record(z.string().min(1).max(64), pattern).default({}),
  }),
  z.object({ kind: z.literal("finishes") }),
  z.object({ kind: z.literal("max_steps"), steps: z.number().int().min(1).max(10_000) }),
  z.object({ kind: z.literal("max_cost"), usd: z.number().min(0).max(100_000) }),
  z.object({ kind: z.literal("no_disclosure") }),
  z.object({ kind: z.literal("reply"), contains: z.boolean(), text: z.string().min(1).max(500) }),
  /** Judged by `model` in a call of its own (runtime/rubric-grader.ts): a score of 0–10, passing at `pass_at`. */
  z.object({
    kind: z.literal("rubric"),
    text: z.string().min(1).max(RUBRIC_CHARS),
    model: z.string().min(1).max(200),
    pass_at: z.number().int().min(1).max(10).default(RUBRIC_PASS_AT),
  }),
]);

export const MAX_EXPECTATIONS = 50;
export const expectationsSchema = z.array(expectationSchema).max(MAX_EXPECTATIONS);

export type Expectation = z.infer<typeof expectationSchema>;
export type ActionExpectation = Extract<Expectation, { kind: "action" }>;
export type RubricExpectation = Extract<Expectation, { kind: "rubric" }>;

/**
 * Which grade of a run is this rubric's: its words and its grader. Its pass mark is not in
 * it, so raising the mark judges the same score again rather than paying for a new one.
 */
export const rubricKey = (rubric: Pick<RubricExpectation, "text" | "model">) =>
  sha256(`${rubric.model}\n${rubric.text}`).slice(0, 32);

/**
 * A case's stored expectations, read through the schema: one that no longer parses (a shape
 * of an older build) is left out, never graded as something it does not say.
 */
export function storedExpectations(raw: unknown): Expectation[] {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((item) => {
    const parsed = expectationSchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
}

/** "body ~ `/thanks/` and title ~ `/x/`": what an action's params must match, in words. */
function patternWords(params: Record<string, string>): string {
  return Object.entries(params)
    .map(([name, value]) => `${mdEscape(name)} ~ ${code(`/${value}/`)}`)
    .join(" and ");
}

/** Markdown: "Takes `create_comment` with body ~ `/thanks/`", "Never takes `delete_note`", "Finishes"… */
export function expectationWords(expectation: Expectation): string {
  switch (expectation.kind) {
    case "action": {
      const verb = expectation.must ? "Takes" : "Never takes";
      const withParams = Object.keys(expectation.params).length
        ? ` with ${patternWords(expectation.params)}`
        : "";
      return `${verb} ${code(expectation.action)}${withParams}`;
    }
    case "finishes":
      return "Finishes";
    case "max_steps":
      return `At most ${expectation.steps} step${expectation.steps === 1 ? "" : "s"}`;
    case "max_cost":
      return `Costs at most $${expectation.usd}`;
    case "no_disclosure":
      return "No disclosure hold";
    case "reply":
      return `Its reply ${expectation.contains ? "contains" : "does not contain"} “${mdEscape(expectation.text)}”`;
    case "rubric":
      return `Graded by ${code(expectation.model)} at ${expectation.pass_at}/10 or more: “${mdEscape(expectation.text)}”`;
  }
}
