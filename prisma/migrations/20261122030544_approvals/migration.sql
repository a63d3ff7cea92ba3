-- CreateEnum
CREATE TYPE "PendingStatus" AS ENUM ('pending', 'approved', 'rejected', 'expired', 'executed', 'failed');

-- CreateTable
CREATE TABLE "agent_pending_actions" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "run_id" TEXT,
    "agent_id" TEXT NOT NULL,
    "action_name" TEXT NOT NULL,
    "params" JSONB NOT NULL,
    "edited_params" JSONB,
    "page_path" TEXT NOT NULL,
    "context_summary" TEXT NOT NULL DEFAULT '',
    "reason" TEXT NOT NULL DEFAULT '',
    "matched_rule" TEXT NOT NULL,
    "waits" BOOLEAN NOT NULL DEFAULT false,
    "status" "PendingStatus" NOT NULL DEFAULT 'pending',
    "reviewed_by_id" TEXT,
    "reviewed_at" TIMESTAMP(3),
    "review_note" TEXT,
    "expires_at" TIMESTAMP(3) NOT NULL,
    "result" TEXT,
    "result_path" TEXT,
    "error" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "executed_at" TIMESTAMP(3),

    CONSTRAINT "agent_pending_actions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "agent_pending_actions_tenant_id_agent_id_status_created_at_idx" ON "agent_pending_actions"("tenant_id", "agent_id", "status", "created_at");

-- CreateIndex
CREATE INDEX "agent_pending_actions_status_expires_at_idx" ON "agent_pending_actions"("status", "expires_at");

-- AddForeignKey
ALTER TABLE "agent_pending_actions" ADD CONSTRAINT "agent_pending_actions_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_pending_actions" ADD CONSTRAINT "agent_pending_actions_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "subagent_task_runs"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_pending_actions" ADD CONSTRAINT "agent_pending_actions_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_pending_actions" ADD CONSTRAINT "agent_pending_actions_reviewed_by_id_fkey" FOREIGN KEY ("reviewed_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;
