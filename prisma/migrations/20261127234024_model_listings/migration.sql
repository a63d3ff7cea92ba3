-- AlterTable
ALTER TABLE "agent_api_keys" ADD COLUMN     "listed_models" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "models_listed_at" TIMESTAMP(3);
