// The outbox: an event row is written in the same transaction as the change it
// describes, so an event exists exactly when its change committed. Its insert NOTIFYs
// (a trigger: the `events_notify` migration), delivered on commit, which wakes the relay
// without polling delay.
import type { Db } from "../db/prisma.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import { newId } from "../lib/ids.ts";
import { activeTraceparent } from "../lib/telemetry.ts";
import { EVENTS_CHANNEL } from "./events-channel.ts";
import type { ActionCtx } from "./registry/types.ts";

export { EVENTS_CHANNEL };

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
  runId?: string;
}

export async function emitEvent(tx: Db, newEvent: NewEvent): Promise<string> {
  const id = newId();
  await tx.event.create({
    data: {
      id,
      tenantId: newEvent.tenantId,
      actorId: newEvent.actorId,
      type: newEvent.type,
      studioId: newEvent.studioId ?? null,
      subjectType: newEvent.subjectType,
      subjectId: newEvent.subjectId,
      parentChain: (newEvent.parentChain ?? []) as unknown as Prisma.InputJsonValue,
      payload: newEvent.payload ?? {},
      runId: newEvent.runId ?? null,
      traceparent: activeTraceparent() ?? null,
    },
  });
  return id;
}

/** An action's event: the actor, tenant and run come from the context, and the run's resource record sees it. */
export async function emit(
  ctx: ActionCtx,
  event: Omit<NewEvent, "tenantId" | "actorId" | "runId">,
): Promise<string> {
  ctx.emitted.push({ type: event.type, subjectType: event.subjectType, subjectId: event.subjectId });
  return emitEvent(ctx.tx, { ...event, tenantId: ctx.tenant.id, actorId: ctx.actor.id, runId: ctx.run?.id });
}
