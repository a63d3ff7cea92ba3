// Ending a person's own sessions from their security page: one (a browser left signed in
// elsewhere), or every other (the one asking stays). Ending deletes the row: that cookie
// answers 401 from its next request. A session is a credential, so a token needs `manage`.
import { z } from "zod";
import { NotFoundError } from "../../lib/errors.ts";
import { plural } from "../../lib/plural.ts";
import { recordSecurityEvent } from "../accounts/security-events.ts";
import { toSelf } from "../registry/audiences.ts";
import { type Ctx, defineAction } from "../registry/types.ts";
import { endSessions } from "../sessions.ts";
import { idSchema } from "../validation.ts";
import { peopleOnly } from "./notification-settings.ts";

export const securityPath = (handle: string) => `/u/${handle}/settings/security`;

/** The session this request came with, when it came with one. */
export const currentSession = (ctx: Ctx) => (ctx.auth?.via === "session" ? ctx.auth.sessionId : undefined);

export const endSession = defineAction({
  name: "end_session",
  description: "End one of your sessions: that browser is signed out at its next request",
  params: z.object({ id: idSchema.meta({ description: "the session's id", pickedBeside: true }) }),
  writes: true,
  manage: true,
  audience: toSelf("session"),
  destructive: "That browser is signed out at once and must sign in again.",
  available: peopleOnly,
  async execute(ctx, params) {
    const ended = await ctx.tx.session.deleteMany({
      where: { id: params.id, userId: ctx.actor.id, tenantId: ctx.tenant.id },
    });
    if (!ended.count) throw new NotFoundError(`No session ${params.id} among your sessions`);
    const own = params.id === currentSession(ctx);
    return {
      status: 200,
      location: own ? "/login" : securityPath(ctx.actor.handle),
      notice: own ? "This session ended: sign in again." : "Session ended.",
    };
  },
});

export const endOtherSessions = defineAction({
  name: "end_other_sessions",
  description: "End every session of yours but this one",
  params: z.object({}),
  writes: true,
  manage: true,
  audience: toSelf("session"),
  destructive: "Every other browser signed in as you is signed out at once.",
  available: peopleOnly,
  async execute(ctx) {
    const count = await endSessions(ctx.tx, ctx.tenant.id, ctx.actor.id, currentSession(ctx));
    if (count)
      await recordSecurityEvent(ctx.tx, {
        tenantId: ctx.tenant.id,
        userId: ctx.actor.id,
        actorId: ctx.actor.id,
        kind: "sessions_ended",
        detail: `You ended ${plural(count, "other session")} of yours.`,
        ...(ctx.origin && { origin: ctx.origin }),
      });
    return {
      status: 200,
      location: securityPath(ctx.actor.handle),
      notice: count ? `Ended ${plural(count, "other session")}.` : "You had no other session.",
    };
  },
});
