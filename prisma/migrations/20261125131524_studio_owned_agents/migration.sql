-- AlterTable
ALTER TABLE "agent_api_keys" ADD COLUMN     "studio_id" TEXT,
ALTER COLUMN "owner_id" DROP NOT NULL;

-- AlterTable
ALTER TABLE "users" ADD COLUMN     "owner_studio_id" TEXT;

-- CreateIndex
CREATE INDEX "agent_api_keys_tenant_id_studio_id_idx" ON "agent_api_keys"("tenant_id", "studio_id");

-- CreateIndex
CREATE INDEX "users_owner_studio_id_idx" ON "users"("owner_studio_id");

-- AddForeignKey
ALTER TABLE "users" ADD CONSTRAINT "users_owner_studio_id_fkey" FOREIGN KEY ("owner_studio_id") REFERENCES "studios"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_api_keys" ADD CONSTRAINT "agent_api_keys_studio_id_fkey" FOREIGN KEY ("studio_id") REFERENCES "studios"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Existing agents keep their person owner (parent_id) untouched. "One owner, of one kind" is
-- not a CHECK constraint: Prisma's schema engine (wasm) panics diffing a database that has
-- one, and it cannot apply a plpgsql trigger. Its two writers (create_subagent and
-- transfer_subagent, and createKey's holder type) keep it, and test/studio-agents.test.ts checks.
