-- AlterTable
ALTER TABLE "users" ADD COLUMN     "last_seen_at" TIMESTAMP(3);

-- What the sessions still say of when each person was last seen.
UPDATE "users" SET "last_seen_at" = seen."at"
FROM (SELECT "user_id", max("last_seen_at") AS "at" FROM "sessions" GROUP BY "user_id") AS seen
WHERE seen."user_id" = "users"."id";
