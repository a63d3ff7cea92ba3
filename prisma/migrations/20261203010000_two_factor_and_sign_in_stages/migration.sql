-- CreateEnum
CREATE TYPE "SessionStage" AS ENUM ('full', 'second_factor', 'enrol');

-- CreateEnum
CREATE TYPE "SignInMethod" AS ENUM ('password', 'sso', 'passkey');

-- CreateEnum
CREATE TYPE "TwoFactorPolicy" AS ENUM ('off', 'admins', 'everyone');

-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "method" "SignInMethod" NOT NULL DEFAULT 'password',
ADD COLUMN     "stage" "SessionStage" NOT NULL DEFAULT 'full';

-- AlterTable
ALTER TABLE "tenants" ADD COLUMN     "two_factor_policy" "TwoFactorPolicy" NOT NULL DEFAULT 'off';

-- CreateTable
CREATE TABLE "totp_factors" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "encrypted_seed" BYTEA NOT NULL,
    "key_version" INTEGER NOT NULL,
    "confirmed_at" TIMESTAMP(3),
    "last_step" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "totp_factors_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "recovery_codes" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "code_hash" TEXT NOT NULL,
    "used_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "recovery_codes_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "totp_factors_user_id_key" ON "totp_factors"("user_id");

-- CreateIndex
CREATE UNIQUE INDEX "recovery_codes_user_id_code_hash_key" ON "recovery_codes"("user_id", "code_hash");

-- AddForeignKey
ALTER TABLE "totp_factors" ADD CONSTRAINT "totp_factors_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "totp_factors" ADD CONSTRAINT "totp_factors_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "recovery_codes" ADD CONSTRAINT "recovery_codes_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "recovery_codes" ADD CONSTRAINT "recovery_codes_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;
