// Dismissing the actor's own notifications, one or all ("mark all read"; pages/notifications.ts).
// Opening what one points at reads it too (notifications.ts markOpened).
import { z } from "zod";
import { NotFoundError } from "../../lib/errors.ts";
import { plural } from "../../lib/plural.ts";
import { unreadOf } from "../notifications.ts";
import { toSelf } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { idSchema } from "../validation.ts";

export const dismiss = defineAction({
  name: "dismiss",
  description: "Dismiss one notification",
  params: z.object({ id: idSchema.meta({ description: "the notification's id", pickedBeside: true }) }),
  writes: true,
  audience: toSelf("notification dismissal"),
  async execute(ctx, params) {
    const dismissed = await ctx.tx.notification.updateMany({
      where: { id: params.id, ...unreadOf(ctx.actor.id, ctx.tenant.id) },
      data: { dismissedAt: new Date() },
    });
    if (!dismissed.count) throw new NotFoundError(`No unread notification ${params.id}`);
    return { status: 200, location: "/notifications", notice: "Dismissed" };
  },
});

export const dismissAll = defineAction({
  name: "dismiss_all",
  description: "Mark all your notifications read",
  params: z.object({}),
  writes: true,
  audience: toSelf("notification dismissal"),
  async execute(ctx) {
    const dismissed = await ctx.tx.notification.updateMany({
      where: unreadOf(ctx.actor.id, ctx.tenant.id),
      data: { dismissedAt: new Date() },
    });
    return {
      status: 200,
      location: "/notifications",
      notice: `Marked ${plural(dismissed.count, "notification")} read`,
    };
  },
});
