-- AlterTable
ALTER TABLE "llm_usage" ADD COLUMN     "cache_write_tokens" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "subagent_task_runs" ADD COLUMN     "cache_write_tokens" INTEGER NOT NULL DEFAULT 0;
