-- An agent's test cases (services/agents/core/test-cases.ts): a run's trigger kept to be run
-- again, with what its managers expect of a run of it (expectations.ts, graded by grading.ts).
-- CreateTable
CREATE TABLE "agent_test_cases" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "from_run_id" TEXT,
    "name" TEXT NOT NULL,
    "task" TEXT NOT NULL,
    "trigger_kind" TEXT NOT NULL,
    "viewer_ids" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "label" JSONB NOT NULL DEFAULT '[]',
    "expectations" JSONB NOT NULL DEFAULT '[]',
    "created_by_id" TEXT,
    "created_at" TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agent_test_cases_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "agent_test_cases_tenant_id_agent_id_created_at_idx" ON "agent_test_cases"("tenant_id", "agent_id", "created_at");

-- AddForeignKey
ALTER TABLE "agent_test_cases" ADD CONSTRAINT "agent_test_cases_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_test_cases" ADD CONSTRAINT "agent_test_cases_from_run_id_fkey" FOREIGN KEY ("from_run_id") REFERENCES "subagent_task_runs"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_test_cases" ADD CONSTRAINT "agent_test_cases_created_by_id_fkey" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;
