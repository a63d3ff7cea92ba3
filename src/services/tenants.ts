import type { Db } from "../db/prisma.ts";
import { newId } from "../lib/ids.ts";
import { hashPassword } from "./passwords.ts";

export async function createTenant(db: Db, subdomain: string, name: string) {
  return db.tenant.create({ data: { id: newId(), subdomain, name } });
}

export async function createPerson(
  db: Db,
  tenantId: string,
  input: { handle: string; name: string; email: string; password: string },
) {
  return db.user.create({
    data: {
      id: newId(),
      tenantId,
      handle: input.handle,
      name: input.name,
      email: input.email.toLowerCase(),
      kind: "person",
      passwordHash: await hashPassword(input.password),
    },
  });
}
