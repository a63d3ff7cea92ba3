-- AlterTable
ALTER TABLE "subagent_task_runs" ADD COLUMN     "trigger_ref" TEXT;
