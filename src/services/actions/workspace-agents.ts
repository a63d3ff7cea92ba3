// The workspace's own rules for agents, set by its admins (/settings/agents).

import { z } from "zod";
import type { Prisma } from "../../generated/prisma/client.ts";
import { ForbiddenError } from "../../lib/errors.ts";
import { plural } from "../../lib/plural.ts";
import { GRANTABLE, GRANTABLE_GROUPS } from "../agents/policy/capabilities.ts";
import { toWorkspace } from "../registry/audiences.ts";
import { type ActionCtx, type Ctx, defineAction } from "../registry/types.ts";

/** One checkbox per grantable action, grouped, labelled in words, its name as the hint. */
const perAction = () =>
  z.object(
    Object.fromEntries(
      GRANTABLE_GROUPS.flatMap((g) =>
        g.actions.map(([a, label]) => [a, z.boolean().meta({ label, description: a, group: g.group })]),
      ),
    ) as Record<string, z.ZodBoolean>,
  );

export const workspaceAdminsOnly = (ctx: Ctx) =>
  ctx.actor.tenantAdmin ? null : "only workspace admins change the workspace's agent settings";

/** Read-modify-write of the tenant's settings, under the tenant row's lock. */
async function changeSettings(ctx: ActionCtx, change: (settings: Record<string, unknown>) => void) {
  const refused = workspaceAdminsOnly(ctx);
  if (refused) throw new ForbiddenError(refused);
  await ctx.tx.$queryRaw`SELECT id FROM tenants WHERE id = ${ctx.tenant.id} FOR UPDATE`;
  const t = await ctx.tx.tenant.findUniqueOrThrow({ where: { id: ctx.tenant.id } });
  const settings = { ...((t.settings ?? {}) as Record<string, unknown>) };
  change(settings);
  await ctx.tx.tenant.update({ where: { id: t.id }, data: { settings: settings as Prisma.InputJsonValue } });
}

export const setHumanOnly = defineAction({
  name: "set_human_only",
  description: "Choose which content actions no agent in this workspace may be granted",
  params: perAction(),
  writes: true,
  audience: toWorkspace("workspace setting"),
  available: workspaceAdminsOnly,
  async execute(ctx, p) {
    const humanOnly = GRANTABLE.filter((a) => (p as Record<string, boolean>)[a]);
    await changeSettings(ctx, (s) => {
      s.human_only = humanOnly;
    });
    return {
      status: 200,
      location: "/settings/agents",
      notice: humanOnly.length
        ? `${plural(humanOnly.length, "action")} kept for people: no agent may use them`
        : "Agents may be granted every content action again",
    };
  },
});
