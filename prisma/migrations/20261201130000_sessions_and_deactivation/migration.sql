-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "ip_address" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "last_seen_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
ADD COLUMN     "user_agent" TEXT NOT NULL DEFAULT '';

-- AlterTable
ALTER TABLE "users" ADD COLUMN     "deactivated_at" TIMESTAMP(3),
ADD COLUMN     "known_browsers" JSONB NOT NULL DEFAULT '[]';
