-- CreateTable
CREATE TABLE "secret_reveals" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "session_id" TEXT NOT NULL,
    "label" TEXT NOT NULL,
    "location" TEXT NOT NULL,
    "sealed" BYTEA,
    "key_version" INTEGER NOT NULL,
    "shown_at" TIMESTAMP(3),
    "expires_at" TIMESTAMP(3) NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "secret_reveals_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "secret_reveals_expires_at_idx" ON "secret_reveals"("expires_at");

-- AddForeignKey
ALTER TABLE "secret_reveals" ADD CONSTRAINT "secret_reveals_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "secret_reveals" ADD CONSTRAINT "secret_reveals_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
