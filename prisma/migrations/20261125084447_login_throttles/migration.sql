-- CreateTable
CREATE TABLE "login_throttles" (
    "tenant_id" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "failures" INTEGER NOT NULL,
    "window_start" TIMESTAMP(3) NOT NULL,
    "strikes" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "login_throttles_pkey" PRIMARY KEY ("tenant_id","scope","key")
);

-- CreateIndex
CREATE INDEX "login_throttles_window_start_idx" ON "login_throttles"("window_start");

-- AddForeignKey
ALTER TABLE "login_throttles" ADD CONSTRAINT "login_throttles_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
