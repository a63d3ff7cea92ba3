-- AlterTable
ALTER TABLE "subagent_task_runs" ADD COLUMN     "policy" JSONB,
ADD COLUMN     "policy_pinned" BOOLEAN NOT NULL DEFAULT false;
