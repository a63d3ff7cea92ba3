-- AlterTable
ALTER TABLE "agent_pending_actions" ADD COLUMN     "result_subject_id" TEXT;

-- CreateIndex
CREATE INDEX "agent_pending_actions_tenant_id_result_subject_id_idx" ON "agent_pending_actions"("tenant_id", "result_subject_id");

-- CreateIndex
CREATE INDEX "agent_pending_actions_run_id_idx" ON "agent_pending_actions"("run_id");
