// A person's choice of how they hear of what their agents need (services/reach/preferences.ts).
import { z } from "zod";
import { CHANNEL_LABELS, CHANNELS, KIND_LABELS, REACH_KINDS, type ReachKind } from "../reach/preferences.ts";
import { toSelf } from "../registry/audiences.ts";
import { type Ctx, defineAction } from "../registry/types.ts";

export const peopleOnly = (ctx: Ctx) =>
  ctx.actor.kind === "person" ? null : "only people choose how they are notified";

export const notificationsPath = (handle: string) => `/u/${handle}/settings/notifications`;

export const setNotifications = defineAction({
  name: "set_notifications",
  description:
    "Choose how you hear of what your agents need: in the app, by mail at once, in a daily digest, or not at all",
  params: z.object(
    Object.fromEntries(
      REACH_KINDS.map((kind) => [
        kind,
        z.enum(CHANNELS).meta({ label: KIND_LABELS[kind], optionLabels: CHANNEL_LABELS }),
      ]),
    ) as Record<ReachKind, z.ZodEnum<{ [C in (typeof CHANNELS)[number]]: C }>>,
  ),
  writes: true,
  audience: toSelf("notification settings"),
  available: peopleOnly,
  async execute(ctx, params) {
    await ctx.tx.user.update({ where: { id: ctx.actor.id }, data: { reachPrefs: params } });
    return {
      status: 200,
      location: notificationsPath(ctx.actor.handle),
      notice: "Notification settings saved",
    };
  },
});
