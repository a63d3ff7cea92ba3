// The one rule about workspace admins: a workspace is never left without an active one. Every
// change that can take an admin away (a role change, a deactivation) asks here, in its own
// transaction and before it writes, so the refusal reads the same wherever it comes from.
import type { Db } from "../../db/prisma.ts";
import type { User } from "../../generated/prisma/client.ts";
import { ConflictError } from "../../lib/errors.ts";

/**
 * Refuses (409, in words) when `person` is the workspace's last active admin. The active
 * admins' rows are locked first, in id order: two admins demoting or deactivating each other
 * at once take turns, and the second sees what the first left.
 */
export async function ensureAnotherAdmin(
  tx: Db,
  person: Pick<User, "id" | "tenantId" | "handle">,
  change: "demoted" | "deactivated",
): Promise<void> {
  const admins = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM users
    WHERE tenant_id = ${person.tenantId} AND kind = 'person' AND tenant_admin
      AND deactivated_at IS NULL AND archived_at IS NULL
    ORDER BY id
    FOR UPDATE`;
  if (!admins.some((admin) => admin.id === person.id)) return;
  if (admins.some((admin) => admin.id !== person.id)) return;
  const verb = change === "demoted" ? "made a member" : "deactivated";
  throw new ConflictError(
    `@${person.handle} is the workspace's last admin and cannot be ${verb}: make someone else a workspace admin first, so the workspace always has one.`,
  );
}
