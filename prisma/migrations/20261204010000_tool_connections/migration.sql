-- Tool connections (issue 45): remote MCP servers connected by a person or for a studio, their
-- sealed secrets, and the tools each lists with the definition its owner last allowed (pinned).
-- CreateEnum
CREATE TYPE "ToolAuthKind" AS ENUM ('none', 'bearer', 'oauth');

-- CreateEnum
CREATE TYPE "ToolAudience" AS ENUM ('owner', 'studio', 'outside');

-- CreateEnum
CREATE TYPE "ToolConnectionStatus" AS ENUM ('connected', 'needs_sign_in', 'unreachable', 'tools_changed');

-- CreateTable
CREATE TABLE "tool_connections" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "owner_user_id" TEXT,
    "studio_id" TEXT,
    "name" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "auth_kind" "ToolAuthKind" NOT NULL DEFAULT 'none',
    "encrypted_token" BYTEA,
    "token_key_version" INTEGER,
    "encrypted_client" BYTEA,
    "client_key_version" INTEGER,
    "token_expires_at" TIMESTAMP(3),
    "audience" "ToolAudience" NOT NULL DEFAULT 'owner',
    "status" "ToolConnectionStatus" NOT NULL DEFAULT 'connected',
    "status_detail" TEXT NOT NULL DEFAULT '',
    "checked_at" TIMESTAMP(3),
    "created_by_id" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "disconnected_at" TIMESTAMP(3),

    CONSTRAINT "tool_connections_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "tool_definitions" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "input_schema" JSONB NOT NULL DEFAULT '{}',
    "annotations" JSONB NOT NULL DEFAULT '{}',
    "hash" TEXT NOT NULL,
    "pinned_hash" TEXT,
    "pinned_definition" JSONB,
    "seen_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tool_definitions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "tool_connections_tenant_id_created_at_idx" ON "tool_connections"("tenant_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "tool_connections_tenant_id_owner_user_id_slug_key" ON "tool_connections"("tenant_id", "owner_user_id", "slug");

-- CreateIndex
CREATE UNIQUE INDEX "tool_connections_tenant_id_studio_id_slug_key" ON "tool_connections"("tenant_id", "studio_id", "slug");

-- CreateIndex
CREATE INDEX "tool_definitions_tenant_id_connection_id_idx" ON "tool_definitions"("tenant_id", "connection_id");

-- CreateIndex
CREATE UNIQUE INDEX "tool_definitions_connection_id_name_key" ON "tool_definitions"("connection_id", "name");

-- AddForeignKey
ALTER TABLE "tool_connections" ADD CONSTRAINT "tool_connections_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tool_connections" ADD CONSTRAINT "tool_connections_owner_user_id_fkey" FOREIGN KEY ("owner_user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tool_connections" ADD CONSTRAINT "tool_connections_studio_id_fkey" FOREIGN KEY ("studio_id") REFERENCES "studios"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tool_connections" ADD CONSTRAINT "tool_connections_created_by_id_fkey" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tool_definitions" ADD CONSTRAINT "tool_definitions_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tool_definitions" ADD CONSTRAINT "tool_definitions_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "tool_connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;
