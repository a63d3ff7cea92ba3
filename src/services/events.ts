// The outbox: an event row is written in the same transaction as the change it
// describes, so an event exists exactly when its change committed. NOTIFY is delivered
// on commit, which wakes the relay without polling delay.
import type { Db } from "../db/prisma.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import { newId } from "../lib/ids.ts";

export const EVENTS_CHANNEL = "cadre_events";

export interface ChainLink {
  type: string;
  id: string;
}

export interface NewEvent {
  tenantId: string;
  actorId: string;
  type: string;
  studioId?: string;
  subjectType: string;
  subjectId: string;
  parentChain?: ChainLink[];
  payload?: Prisma.InputJsonValue;
}

export async function emitEvent(tx: Db, e: NewEvent): Promise<string> {
  const id = newId();
  await tx.event.create({
    data: {
      id,
      tenantId: e.tenantId,
      actorId: e.actorId,
      type: e.type,
      studioId: e.studioId ?? null,
      subjectType: e.subjectType,
      subjectId: e.subjectId,
      parentChain: (e.parentChain ?? []) as unknown as Prisma.InputJsonValue,
      payload: e.payload ?? {},
    },
  });
  await tx.$executeRaw`SELECT pg_notify(${EVENTS_CHANNEL}, ${id})`;
  return id;
}
