-- CreateEnum
CREATE TYPE "TokenScope" AS ENUM ('read', 'act', 'manage');

-- AlterTable
-- Tokens made before scopes could do everything, creating tokens included: they keep doing
-- so (`manage`), and their owners can revoke them for narrower ones. New tokens default to `act`.
ALTER TABLE "api_tokens" ADD COLUMN     "expires_at" TIMESTAMP(3),
ADD COLUMN     "scope" "TokenScope" NOT NULL DEFAULT 'manage';
ALTER TABLE "api_tokens" ALTER COLUMN "scope" SET DEFAULT 'act';
