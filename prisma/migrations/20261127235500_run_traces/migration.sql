-- AlterTable
ALTER TABLE "events" ADD COLUMN     "traceparent" TEXT;

-- AlterTable
ALTER TABLE "subagent_task_runs" ADD COLUMN     "trigger_traceparent" TEXT,
ADD COLUMN     "traceparent" TEXT;
