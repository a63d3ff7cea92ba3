-- CreateTable
CREATE TABLE "agent_subscriptions" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "subject_type" TEXT NOT NULL,
    "subject_id" TEXT NOT NULL,
    "studio_id" TEXT NOT NULL,
    "events" TEXT[],
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "disabled_reason" TEXT,
    "created_by_id" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agent_subscriptions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "agent_subscription_events" (
    "subscription_id" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agent_subscription_events_pkey" PRIMARY KEY ("subscription_id","event_id")
);

-- CreateIndex
CREATE INDEX "agent_subscriptions_tenant_id_subject_type_subject_id_idx" ON "agent_subscriptions"("tenant_id", "subject_type", "subject_id");

-- CreateIndex
CREATE INDEX "agent_subscriptions_tenant_id_studio_id_idx" ON "agent_subscriptions"("tenant_id", "studio_id");

-- CreateIndex
CREATE UNIQUE INDEX "agent_subscriptions_agent_id_subject_type_subject_id_key" ON "agent_subscriptions"("agent_id", "subject_type", "subject_id");

-- CreateIndex
CREATE INDEX "agent_subscription_events_created_at_idx" ON "agent_subscription_events"("created_at");

-- AddForeignKey
ALTER TABLE "agent_subscriptions" ADD CONSTRAINT "agent_subscriptions_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_subscriptions" ADD CONSTRAINT "agent_subscriptions_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_subscription_events" ADD CONSTRAINT "agent_subscription_events_subscription_id_fkey" FOREIGN KEY ("subscription_id") REFERENCES "agent_subscriptions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
