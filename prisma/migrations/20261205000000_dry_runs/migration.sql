-- Dry runs (docs/testing-agents.md): a run that reads for real and records each write as what
-- it would have done, with the policy's decision, executing none (services/registry/rehearsal.ts).
ALTER TABLE "subagent_task_runs" ADD COLUMN "dry" BOOLEAN NOT NULL DEFAULT false;

-- The usage page sums a window's dry runs (their spend is evaluation spend): few rows among many.
CREATE INDEX "subagent_task_runs_dry_idx" ON "subagent_task_runs"("tenant_id", "created_at") WHERE "dry";
