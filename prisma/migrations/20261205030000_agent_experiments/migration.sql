-- Experiments (services/agents/triggers/experiments.ts): an agent's test cases run again as dry
-- runs under its current settings and under a candidate (a stored version, an edited prompt,
-- another model), side by side, within a cost cap named before it starts.
-- CreateTable
CREATE TABLE "agent_experiments" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "created_by_id" TEXT,
    "candidate" JSONB NOT NULL,
    "candidate_words" TEXT NOT NULL,
    "baseline_version" INTEGER,
    "cost_cap_micros" BIGINT NOT NULL,
    "parallel" INTEGER NOT NULL,
    "stop_reason" TEXT,
    "error" TEXT,
    "created_at" TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "stopped_at" TIMESTAMP(6),

    CONSTRAINT "agent_experiments_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "agent_experiments_tenant_id_agent_id_created_at_idx" ON "agent_experiments"("tenant_id", "agent_id", "created_at");

ALTER TABLE "agent_experiments" ADD CONSTRAINT "agent_experiments_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "agent_experiments" ADD CONSTRAINT "agent_experiments_created_by_id_fkey" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- An experiment's runs: which experiment, which case, which side ("current" or "candidate").
ALTER TABLE "subagent_task_runs" ADD COLUMN "experiment_id" TEXT, ADD COLUMN "case_id" TEXT, ADD COLUMN "arm" TEXT;
ALTER TABLE "subagent_task_runs" ADD CONSTRAINT "subagent_task_runs_experiment_id_fkey" FOREIGN KEY ("experiment_id") REFERENCES "agent_experiments"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "subagent_task_runs" ADD CONSTRAINT "subagent_task_runs_case_id_fkey" FOREIGN KEY ("case_id") REFERENCES "agent_test_cases"("id") ON DELETE SET NULL ON UPDATE CASCADE;
CREATE INDEX "subagent_task_runs_experiment_id_idx" ON "subagent_task_runs"("experiment_id") WHERE "experiment_id" IS NOT NULL;
