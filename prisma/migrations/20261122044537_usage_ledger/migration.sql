-- AlterTable
ALTER TABLE "subagent_task_runs" ADD COLUMN     "cached_tokens" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "cost_micros" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "users" ADD COLUMN     "paused_kind" TEXT,
ADD COLUMN     "tenant_admin" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "agent_api_keys" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "label" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "base_url" TEXT NOT NULL,
    "encrypted_key" BYTEA NOT NULL,
    "key_version" INTEGER NOT NULL,
    "key_hint" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMP(3),
    "last_tested_at" TIMESTAMP(3),
    "last_test_ok" BOOLEAN,
    "auth_failed_at" TIMESTAMP(3),
    "auth_error" TEXT,
    "revoked_at" TIMESTAMP(3),
    "total_calls" INTEGER NOT NULL DEFAULT 0,
    "total_input_tokens" BIGINT NOT NULL DEFAULT 0,
    "total_cached_tokens" BIGINT NOT NULL DEFAULT 0,
    "total_output_tokens" BIGINT NOT NULL DEFAULT 0,
    "total_cost_micros" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "agent_api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "llm_usage" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "owner_id" TEXT,
    "run_id" TEXT,
    "step_number" INTEGER NOT NULL,
    "api_key_id" TEXT,
    "model" TEXT NOT NULL,
    "pricing_version" TEXT NOT NULL,
    "priced" BOOLEAN NOT NULL,
    "input_tokens" INTEGER NOT NULL,
    "cached_tokens" INTEGER NOT NULL,
    "output_tokens" INTEGER NOT NULL,
    "cost_micros" BIGINT NOT NULL,
    "latency_ms" INTEGER NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "llm_usage_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "agent_usage_months" (
    "agent_id" TEXT NOT NULL,
    "month" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "calls" INTEGER NOT NULL DEFAULT 0,
    "input_tokens" BIGINT NOT NULL DEFAULT 0,
    "cached_tokens" BIGINT NOT NULL DEFAULT 0,
    "output_tokens" BIGINT NOT NULL DEFAULT 0,
    "cost_micros" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "agent_usage_months_pkey" PRIMARY KEY ("agent_id","month")
);

-- CreateTable
CREATE TABLE "llm_usage_daily" (
    "agent_id" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "model" TEXT NOT NULL,
    "key_ref" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "owner_id" TEXT,
    "calls" INTEGER NOT NULL DEFAULT 0,
    "unpriced_calls" INTEGER NOT NULL DEFAULT 0,
    "input_tokens" BIGINT NOT NULL DEFAULT 0,
    "cached_tokens" BIGINT NOT NULL DEFAULT 0,
    "output_tokens" BIGINT NOT NULL DEFAULT 0,
    "cost_micros" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "llm_usage_daily_pkey" PRIMARY KEY ("agent_id","day","model","key_ref")
);

-- CreateIndex
CREATE INDEX "agent_api_keys_tenant_id_owner_id_idx" ON "agent_api_keys"("tenant_id", "owner_id");

-- CreateIndex
CREATE INDEX "llm_usage_tenant_id_agent_id_created_at_idx" ON "llm_usage"("tenant_id", "agent_id", "created_at");

-- CreateIndex
CREATE INDEX "llm_usage_tenant_id_owner_id_created_at_idx" ON "llm_usage"("tenant_id", "owner_id", "created_at");

-- CreateIndex
CREATE INDEX "llm_usage_tenant_id_created_at_idx" ON "llm_usage"("tenant_id", "created_at");

-- CreateIndex
CREATE INDEX "llm_usage_run_id_idx" ON "llm_usage"("run_id");

-- CreateIndex
CREATE INDEX "llm_usage_api_key_id_idx" ON "llm_usage"("api_key_id");

-- CreateIndex
CREATE INDEX "llm_usage_daily_tenant_id_day_idx" ON "llm_usage_daily"("tenant_id", "day");

-- CreateIndex
CREATE INDEX "llm_usage_daily_tenant_id_owner_id_day_idx" ON "llm_usage_daily"("tenant_id", "owner_id", "day");

-- CreateIndex
CREATE INDEX "subagent_task_runs_tenant_id_created_at_idx" ON "subagent_task_runs"("tenant_id", "created_at");

-- AddForeignKey
ALTER TABLE "agent_api_keys" ADD CONSTRAINT "agent_api_keys_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_api_keys" ADD CONSTRAINT "agent_api_keys_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "llm_usage" ADD CONSTRAINT "llm_usage_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "llm_usage" ADD CONSTRAINT "llm_usage_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "llm_usage" ADD CONSTRAINT "llm_usage_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "llm_usage" ADD CONSTRAINT "llm_usage_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "subagent_task_runs"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "llm_usage" ADD CONSTRAINT "llm_usage_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "agent_api_keys"("id") ON DELETE SET NULL ON UPDATE CASCADE;
