-- Versioned agent settings (services/agents/core/versions.ts): each change of an agent's
-- settings is a numbered row with who, what changed in words, and the settings it left.
-- CreateTable
CREATE TABLE "agent_versions" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "number" INTEGER NOT NULL,
    "author_id" TEXT,
    "changes" JSONB NOT NULL DEFAULT '[]',
    "settings" JSONB NOT NULL,
    "restored_from" INTEGER,
    "created_at" TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agent_versions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "agent_versions_agent_id_number_key" ON "agent_versions"("agent_id", "number");

-- AddForeignKey
ALTER TABLE "agent_versions" ADD CONSTRAINT "agent_versions_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_versions" ADD CONSTRAINT "agent_versions_author_id_fkey" FOREIGN KEY ("author_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Every agent that exists starts at version 1, its settings as they are, so the runs it is
-- queued for from now on record a version. Its whole configuration is kept: versions are read
-- through the one schema of an agent's settings, which picks what a version holds.
INSERT INTO "agent_versions" ("id", "tenant_id", "agent_id", "number", "changes", "settings")
SELECT substr(md5(random()::text || "id"), 1, 12), "tenant_id", "id", 1,
  '["Its settings when versions began to be kept"]'::jsonb, coalesce("agent_config", '{}'::jsonb)
FROM "users" WHERE "kind" = 'subagent';
