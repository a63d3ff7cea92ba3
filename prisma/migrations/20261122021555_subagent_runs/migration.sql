-- CreateEnum
CREATE TYPE "RunStatus" AS ENUM ('queued', 'running', 'waiting', 'completed', 'failed', 'cancelled', 'timed_out', 'skipped');

-- AlterEnum
ALTER TYPE "NotificationKind" ADD VALUE 'agent';

-- AlterTable
ALTER TABLE "events" ADD COLUMN     "run_id" TEXT;

-- AlterTable
ALTER TABLE "users" ADD COLUMN     "paused_at" TIMESTAMP(3),
ADD COLUMN     "paused_reason" TEXT,
ADD COLUMN     "scratchpad" TEXT NOT NULL DEFAULT '';

-- CreateTable
CREATE TABLE "subagent_task_runs" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "initiated_by_id" TEXT,
    "trigger_event_id" TEXT,
    "trigger_kind" TEXT NOT NULL,
    "chain_depth" INTEGER NOT NULL DEFAULT 0,
    "task" TEXT NOT NULL,
    "model" TEXT,
    "status" "RunStatus" NOT NULL DEFAULT 'queued',
    "stop_reason" TEXT,
    "max_steps" INTEGER NOT NULL,
    "timeout_seconds" INTEGER NOT NULL,
    "steps_count" INTEGER NOT NULL DEFAULT 0,
    "final_message" TEXT,
    "error" TEXT,
    "question" TEXT,
    "answer" TEXT,
    "input_tokens" INTEGER NOT NULL DEFAULT 0,
    "output_tokens" INTEGER NOT NULL DEFAULT 0,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lease_owner" TEXT,
    "lease_expires_at" TIMESTAMP(3),
    "stop_requested_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMP(3),
    "completed_at" TIMESTAMP(3),

    CONSTRAINT "subagent_task_runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "subagent_task_run_steps" (
    "id" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "number" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "path" TEXT,
    "detail" JSONB NOT NULL DEFAULT '{}',
    "input_tokens" INTEGER NOT NULL DEFAULT 0,
    "output_tokens" INTEGER NOT NULL DEFAULT 0,
    "llm_ms" INTEGER NOT NULL DEFAULT 0,
    "duration_ms" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subagent_task_run_steps_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "subagent_task_run_resources" (
    "id" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "step_number" INTEGER NOT NULL,
    "resource_type" TEXT NOT NULL,
    "resource_id" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subagent_task_run_resources_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "subagent_task_runs_agent_id_status_created_at_idx" ON "subagent_task_runs"("agent_id", "status", "created_at");

-- CreateIndex
CREATE INDEX "subagent_task_runs_tenant_id_agent_id_created_at_idx" ON "subagent_task_runs"("tenant_id", "agent_id", "created_at");

-- CreateIndex
CREATE INDEX "subagent_task_runs_status_lease_expires_at_idx" ON "subagent_task_runs"("status", "lease_expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "subagent_task_runs_agent_id_trigger_event_id_key" ON "subagent_task_runs"("agent_id", "trigger_event_id");

-- CreateIndex
CREATE UNIQUE INDEX "subagent_task_run_steps_run_id_number_key" ON "subagent_task_run_steps"("run_id", "number");

-- CreateIndex
CREATE INDEX "subagent_task_run_resources_run_id_idx" ON "subagent_task_run_resources"("run_id");

-- AddForeignKey
ALTER TABLE "subagent_task_runs" ADD CONSTRAINT "subagent_task_runs_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subagent_task_runs" ADD CONSTRAINT "subagent_task_runs_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subagent_task_runs" ADD CONSTRAINT "subagent_task_runs_initiated_by_id_fkey" FOREIGN KEY ("initiated_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subagent_task_run_steps" ADD CONSTRAINT "subagent_task_run_steps_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "subagent_task_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subagent_task_run_resources" ADD CONSTRAINT "subagent_task_run_resources_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "subagent_task_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
