-- A person may mute agents' mentions of them: all agents, or some (services/notifications.ts).
-- AlterTable
ALTER TABLE "users" ADD COLUMN     "mute_agent_mentions" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "muted_agent_ids" TEXT[] DEFAULT ARRAY[]::TEXT[];
