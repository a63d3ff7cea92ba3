import { PrismaPg } from "@prisma/adapter-pg";
import { Prisma, PrismaClient } from "../generated/prisma/client.ts";
import { ConflictError } from "../lib/errors.ts";

export type { Prisma } from "../generated/prisma/client.ts";
export { PrismaClient };

/** A transaction client or the root client: services accept either. */
export type Db = Omit<PrismaClient, "$connect" | "$disconnect" | "$on" | "$transaction" | "$extends">;

export function createPrisma(databaseUrl: string, max = 10): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: databaseUrl, max }) });
}

/** A concurrent request inserted the same key after our check: a conflict, not a 500. */
export function conflictOnDuplicate(message: string) {
  return (e: unknown): never => {
    if (e instanceof Prisma.PrismaClientKnownRequestError && e.code === "P2002")
      throw new ConflictError(message);
    throw e;
  };
}
