-- Issue 45, the connection side: the hosts a workspace's tool connections may point at (empty
-- means any public host), and an OAuth sign-in in progress (its state, the authorization URL
-- the person is sent to, and the PKCE verifier, sealed).
-- AlterTable
ALTER TABLE "tenants" ADD COLUMN     "tool_hosts" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- AlterTable
ALTER TABLE "tool_connections" ADD COLUMN     "encrypted_verifier" BYTEA,
ADD COLUMN     "sign_in_state" TEXT,
ADD COLUMN     "sign_in_url" TEXT,
ADD COLUMN     "verifier_key_version" INTEGER;

-- CreateIndex
CREATE UNIQUE INDEX "tool_connections_sign_in_state_key" ON "tool_connections"("sign_in_state");
