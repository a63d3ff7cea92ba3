// A workspace's handle is the first label of its address (<handle>.<BASE_DOMAIN>): a DNS label
// a person types, so lowercase letters, digits and inner hyphens only, and never a word the
// operator's own hosts use.
import type { Db } from "../../db/prisma.ts";
import { handleSchema } from "../validation.ts";

const RESERVED_WORKSPACES = new Set([
  "www",
  "api",
  "admin",
  "app",
  "mail",
  "smtp",
  "static",
  "assets",
  "cdn",
  "status",
  "docs",
  "help",
  "signup",
  "login",
  "localhost",
]);

/** Why this handle cannot name a workspace, in words; null when it can. */
export function workspaceHandleProblem(handle: string): string | null {
  if (!/^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/.test(handle) || handle.length < 2)
    return `“${handle}” is not a valid workspace handle: use 2–40 lowercase letters, digits and inner hyphens (it becomes ${handle || "<handle>"}.<your domain>).`;
  if (RESERVED_WORKSPACES.has(handle)) return `“${handle}” is reserved: choose another workspace handle.`;
  return null;
}

/** A free person handle in this workspace, from their address ("alice.smith@…" → alice-smith, alice-smith2…). */
export async function freePersonHandle(db: Db, tenantId: string, email: string): Promise<string> {
  const local = email.split("@")[0] ?? "";
  let base = local
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^[-_]+|[-_]+$/g, "")
    .slice(0, 28);
  if (!handleSchema.safeParse(base).success) base = `person-${base}`.slice(0, 28).replace(/-+$/, "");
  if (!handleSchema.safeParse(base).success) base = "person";
  const taken = new Set(
    (
      await db.user.findMany({ where: { tenantId, handle: { startsWith: base } }, select: { handle: true } })
    ).map((user) => user.handle),
  );
  if (!taken.has(base)) return base;
  for (let suffix = 2; ; suffix++) if (!taken.has(`${base}${suffix}`)) return `${base}${suffix}`;
}
