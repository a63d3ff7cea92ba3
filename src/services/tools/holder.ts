// Who holds a connection, as the page it is kept on says: a person on their own settings, or a
// studio on the studio's settings, kept by its admins. Every connections page and action finds
// the holder here, so the owner check of a connection is this one function.
import type { Db } from "../../db/prisma.ts";
import type { Prisma, ToolAudience, ToolConnection } from "../../generated/prisma/client.ts";
import { ForbiddenError, NotFoundError } from "../../lib/errors.ts";
import type { Ctx, Scope } from "../registry/types.ts";
import type { ConnectionHolder } from "./connections.ts";

export interface Holder {
  kind: "person" | "studio";
  /** The connections page; a connection's page is `<path>/<id>`. */
  path: string;
  /** Where its connections are: with the tenant, the filter that finds only them. */
  where: Prisma.ToolConnectionWhereInput;
  columns: ConnectionHolder;
  /** The audiences a connection held here may declare (a person's is never "this studio"). */
  audiences: readonly ToolAudience[];
}

export function connectionHolder(scope: Scope): Holder {
  if (scope.studio) {
    const studio = scope.studio;
    if (studio.role !== "admin")
      throw new ForbiddenError(`Only the admins of ${studio.name} manage its tool connections`);
    return {
      kind: "studio",
      path: `/studios/${studio.handle}/settings/tools`,
      where: { studioId: studio.id },
      columns: { studioId: studio.id },
      audiences: ["studio", "outside"],
    };
  }
  const user = scope.user;
  if (!user) throw new Error("a connections page without its person or studio");
  return {
    kind: "person",
    path: `/u/${user.handle}/settings/tools`,
    where: { ownerUserId: user.id },
    columns: { ownerUserId: user.id },
    audiences: ["owner", "outside"],
  };
}

/** The connection `id` on this scope's holder; anyone else's is the same 404 as none. */
export async function heldConnection(ctx: Ctx, scope: Scope, id: string) {
  const holder = connectionHolder(scope);
  const connection = await ctx.db.toolConnection.findFirst({
    where: { id, tenantId: ctx.tenant.id, disconnectedAt: null, ...holder.where },
  });
  if (!connection) throw new NotFoundError(`No tool connection #${id} here`);
  return { holder, connection };
}

/** How a connection's audience is said on its pages. */
export const AUDIENCE_LABELS: Record<ToolAudience, string> = {
  owner: "only me: a personal account",
  studio: "this studio: its members may read what it holds",
  outside: "outside the workspace: anyone may read what is sent",
};

/** A connection's page, from its row: where a sign-in comes back to. */
export async function connectionPath(db: Db, connection: ToolConnection): Promise<string> {
  if (connection.studioId) {
    const studio = await db.studio.findUniqueOrThrow({
      where: { id: connection.studioId },
      select: { handle: true },
    });
    return `/studios/${studio.handle}/settings/tools/${connection.id}`;
  }
  const owner = await db.user.findUniqueOrThrow({
    where: { id: connection.ownerUserId! },
    select: { handle: true },
  });
  return `/u/${owner.handle}/settings/tools/${connection.id}`;
}
