-- Tool calls (issue 45, part 2): an agent's call of a connection's tool, recorded before it
-- leaves (at most once), with its bounded, masked result and who may read it.
-- CreateEnum
CREATE TYPE "ToolCallStatus" AS ENUM ('calling', 'done', 'error', 'failed', 'interrupted');

-- CreateTable
CREATE TABLE "tool_calls" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "run_id" TEXT,
    "connection_id" TEXT NOT NULL,
    "connection_name" TEXT NOT NULL,
    "tool" TEXT NOT NULL,
    "server" TEXT NOT NULL,
    "arguments" JSONB NOT NULL,
    "status" "ToolCallStatus" NOT NULL DEFAULT 'calling',
    "result" TEXT NOT NULL DEFAULT '',
    "source" JSONB,
    "duration_ms" INTEGER,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMP(3),

    CONSTRAINT "tool_calls_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "tool_calls_tenant_id_agent_id_created_at_idx" ON "tool_calls"("tenant_id", "agent_id", "created_at");

-- CreateIndex
CREATE INDEX "tool_calls_run_id_idx" ON "tool_calls"("run_id");

-- AddForeignKey
ALTER TABLE "tool_calls" ADD CONSTRAINT "tool_calls_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tool_calls" ADD CONSTRAINT "tool_calls_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "subagent_task_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
