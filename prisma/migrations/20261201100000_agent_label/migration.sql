-- AlterTable
ALTER TABLE "users" ADD COLUMN     "agent_label" JSONB NOT NULL DEFAULT '[]';

-- What each agent's tokens read so far becomes the agent's label: one for all its tokens.
UPDATE "users" u SET "agent_label" = (
  SELECT coalesce(jsonb_agg(DISTINCT x), '[]') FROM "api_tokens" t, jsonb_array_elements(t."label") x
  WHERE t."user_id" = u."id")
WHERE u."kind" = 'subagent' AND EXISTS (SELECT 1 FROM "api_tokens" t WHERE t."user_id" = u."id" AND t."label" <> '[]');
