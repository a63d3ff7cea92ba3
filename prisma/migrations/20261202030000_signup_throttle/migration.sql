-- Sign-up at the base host is throttled like a login, with no workspace yet: tenant_id ''.
-- DropForeignKey
ALTER TABLE "login_throttles" DROP CONSTRAINT "login_throttles_tenant_id_fkey";
