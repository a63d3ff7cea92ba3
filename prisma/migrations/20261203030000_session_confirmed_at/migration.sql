-- Sessions signed in before re-confirmation existed count as confirmed long ago: their
-- people confirm once before the next sensitive change. New sessions are confirmed at sign-in.
-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "confirmed_at" TIMESTAMP(3) NOT NULL DEFAULT '1970-01-01 00:00:00';
ALTER TABLE "sessions" ALTER COLUMN "confirmed_at" SET DEFAULT CURRENT_TIMESTAMP;
