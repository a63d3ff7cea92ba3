-- CreateEnum
CREATE TYPE "WebhookSignature" AS ENUM ('cadre', 'github');

-- AlterTable
ALTER TABLE "agent_webhooks" ADD COLUMN     "previous_key_version" INTEGER,
ADD COLUMN     "previous_secret" BYTEA,
ADD COLUMN     "previous_secret_until" TIMESTAMP(3),
ADD COLUMN     "signature" "WebhookSignature" NOT NULL DEFAULT 'cadre';
