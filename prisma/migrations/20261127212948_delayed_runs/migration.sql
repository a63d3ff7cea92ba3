-- AlterTable
ALTER TABLE "subagent_task_runs" ADD COLUMN     "not_before" TIMESTAMP(3);
