-- AlterTable
ALTER TABLE "agent_pending_actions" ADD COLUMN     "disclosure" TEXT;

-- AlterTable
ALTER TABLE "api_tokens" ADD COLUMN     "label" JSONB NOT NULL DEFAULT '[]';

-- AlterTable
ALTER TABLE "subagent_task_runs" ADD COLUMN     "label" JSONB NOT NULL DEFAULT '[]',
ADD COLUMN     "viewer_ids" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- AlterTable
ALTER TABLE "users" ADD COLUMN     "scratchpad_label" JSONB NOT NULL DEFAULT '[]';
