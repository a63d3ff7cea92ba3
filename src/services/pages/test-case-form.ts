// "Save as a test case" under a run's steps, filled in from what the run did: the actions it
// took as the ones a run of the case must take, finishing when it finished, its name from its
// task. Its managers keep, strike out or add to them before saving (actions/test-cases.ts).
import type { SubagentTaskRun } from "../../generated/prisma/client.ts";
import { EXPECTATION_FIELDS } from "../actions/test-cases.ts";
import { attempts } from "../agents/core/grading.ts";
import type { Block } from "../registry/types.ts";
import { excerpt } from "./format.ts";

export function saveCaseForm(
  run: Pick<SubagentTaskRun, "task" | "status" | "stopReason" | "model">,
  steps: { number: number; type: string; detail: unknown }[],
): Block {
  const taken = [...new Set(attempts(steps).flatMap((attempt) => (attempt.taken ? [attempt.action] : [])))];
  const finished = run.status === "completed" && run.stopReason === "finished";
  return {
    form: {
      action: "save_test_case",
      fixed: {},
      label: "Save as a test case",
      style: "folded",
      fields: ["name", ...EXPECTATION_FIELDS],
      values: {
        name: excerpt(run.task.split(/\r\n|\r|\n/)[0] ?? "", 80),
        must_take: taken.join("\n"),
        must_finish: finished,
        // The model it ran on, as the grader's to start from: the rubric itself stays blank.
        ...(run.model && { rubric_model: run.model }),
      },
    },
  };
}
