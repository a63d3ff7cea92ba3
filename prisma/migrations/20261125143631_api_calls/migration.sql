-- CreateTable
CREATE TABLE "api_calls" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "token_id" TEXT NOT NULL,
    "actor_id" TEXT NOT NULL,
    "method" TEXT NOT NULL,
    "page" TEXT,
    "tool" TEXT,
    "action" TEXT,
    "status" INTEGER NOT NULL,
    "latency_ms" INTEGER NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "api_calls_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "api_calls_token_id_created_at_idx" ON "api_calls"("token_id", "created_at");

-- CreateIndex
CREATE INDEX "api_calls_created_at_idx" ON "api_calls"("created_at");

-- AddForeignKey
ALTER TABLE "api_calls" ADD CONSTRAINT "api_calls_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_calls" ADD CONSTRAINT "api_calls_token_id_fkey" FOREIGN KEY ("token_id") REFERENCES "api_tokens"("id") ON DELETE CASCADE ON UPDATE CASCADE;
