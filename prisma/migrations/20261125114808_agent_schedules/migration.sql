-- CreateTable
CREATE TABLE "agent_schedules" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "cron" TEXT NOT NULL,
    "time_zone" TEXT NOT NULL,
    "task" TEXT NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "next_fire_at" TIMESTAMP(3),
    "last_fired_at" TIMESTAMP(3),
    "last_run_id" TEXT,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agent_schedules_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "agent_schedules_tenant_id_agent_id_created_at_idx" ON "agent_schedules"("tenant_id", "agent_id", "created_at");

-- CreateIndex
CREATE INDEX "agent_schedules_due_idx" ON "agent_schedules"("next_fire_at") WHERE (enabled);

-- AddForeignKey
ALTER TABLE "agent_schedules" ADD CONSTRAINT "agent_schedules_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_schedules" ADD CONSTRAINT "agent_schedules_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_schedules" ADD CONSTRAINT "agent_schedules_created_by_fkey" FOREIGN KEY ("created_by") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_schedules" ADD CONSTRAINT "agent_schedules_last_run_id_fkey" FOREIGN KEY ("last_run_id") REFERENCES "subagent_task_runs"("id") ON DELETE SET NULL ON UPDATE CASCADE;
