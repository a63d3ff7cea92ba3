-- Graded expectations (services/agents/runtime/rubric-grader.ts): a run judged against a test
-- case's rubric by a model in a call of its own, its score, reason and cost kept per run and
-- rubric (its words and model), so a grading job delivered twice grades once.
CREATE TABLE "agent_rubric_grades" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "experiment_id" TEXT,
    "key" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "score" INTEGER,
    "reason" TEXT,
    "error" TEXT,
    "input_tokens" INTEGER NOT NULL DEFAULT 0,
    "output_tokens" INTEGER NOT NULL DEFAULT 0,
    "cost_micros" BIGINT NOT NULL DEFAULT 0,
    "claimed_at" TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "graded_at" TIMESTAMP(6),

    CONSTRAINT "agent_rubric_grades_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "agent_rubric_grades_run_id_key_key" ON "agent_rubric_grades"("run_id", "key");
CREATE INDEX "agent_rubric_grades_tenant_id_agent_id_claimed_at_idx" ON "agent_rubric_grades"("tenant_id", "agent_id", "claimed_at");
CREATE INDEX "agent_rubric_grades_experiment_id_idx" ON "agent_rubric_grades"("experiment_id");

ALTER TABLE "agent_rubric_grades" ADD CONSTRAINT "agent_rubric_grades_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "subagent_task_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "agent_rubric_grades" ADD CONSTRAINT "agent_rubric_grades_experiment_id_fkey" FOREIGN KEY ("experiment_id") REFERENCES "agent_experiments"("id") ON DELETE CASCADE ON UPDATE CASCADE;
