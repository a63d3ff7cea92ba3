-- AlterTable
ALTER TABLE "subagent_task_runs" ALTER COLUMN "created_at" SET DATA TYPE TIMESTAMP(6);
