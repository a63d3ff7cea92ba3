import { PrismaPg } from "@prisma/adapter-pg";
import { Prisma, PrismaClient } from "../generated/prisma/client.ts";
import { ConflictError } from "../lib/errors.ts";

export type { Prisma } from "../generated/prisma/client.ts";
export { PrismaClient };

/** A transaction client or the root client: services accept either. */
export type Db = Omit<PrismaClient, "$connect" | "$disconnect" | "$on" | "$transaction" | "$extends">;

/** Distinct statement texts a process names; past that (createMany batches vary in size) they go unnamed. */
export const MAX_NAMED_STATEMENTS = 500;

/**
 * Names each distinct SQL text, so a connection parses it once and Postgres can reuse its
 * plan instead of planning it on every call: the agent worker's hot statements (the
 * ledger's, a studio's page) cost more to plan than to run. The names live per process,
 * like the connections that prepared them.
 */
export function statementNamer(max = MAX_NAMED_STATEMENTS) {
  const names = new Map<string, string>();
  return (query: { sql: string }): string => {
    let name = names.get(query.sql);
    if (name === undefined && names.size < max) {
      name = `cadre_${names.size}`;
      names.set(query.sql, name);
    }
    // Unnamed: pg runs it as an unnamed statement, parsed and planned each time.
    return name as string;
  };
}

export function createPrisma(databaseUrl: string, max = 10): PrismaClient {
  const adapter = new PrismaPg(
    { connectionString: databaseUrl, max },
    { statementNameGenerator: statementNamer() },
  );
  return new PrismaClient({ adapter });
}

/** A concurrent request inserted the same key after our check: a conflict, not a 500. */
export function conflictOnDuplicate(message: string) {
  return (e: unknown): never => {
    if (e instanceof Prisma.PrismaClientKnownRequestError && e.code === "P2002")
      throw new ConflictError(message);
    throw e;
  };
}
