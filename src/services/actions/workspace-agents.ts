// The workspace's own rules for agents, set by its admins (/settings/agents). Every change is
// recorded as an event naming who changed which setting from what to what, in the same
// transaction (the page lists them): the workspace's audit trail of its agent settings.

import { z } from "zod";
import type { Prisma } from "../../generated/prisma/client.ts";
import { ForbiddenError } from "../../lib/errors.ts";
import { plural } from "../../lib/plural.ts";
import { SETTING_CHANGED, tenantSettings } from "../agents/core/settings.ts";
import { GRANTABLE, GRANTABLE_GROUPS } from "../agents/policy/capabilities.ts";
import { emit } from "../events.ts";
import { toWorkspace } from "../registry/audiences.ts";
import { type ActionCtx, type Ctx, defineAction } from "../registry/types.ts";

/** One checkbox per grantable action, grouped, labelled in words, its name as the hint. */
export const perAction = () =>
  z.object(
    Object.fromEntries(
      GRANTABLE_GROUPS.flatMap((grouped) =>
        grouped.actions.map(([action, label]) => [
          action,
          z.boolean().meta({ label, description: action, group: grouped.group }),
        ]),
      ),
    ) as Record<string, z.ZodBoolean>,
  );

export const workspaceAdminsOnly = (ctx: Ctx) =>
  ctx.actor.tenantAdmin ? null : "only workspace admins change the workspace's agent settings";

/** Read-modify-write of the tenant's settings, under the tenant row's lock. */
export async function changeSettings(ctx: ActionCtx, change: (settings: Record<string, unknown>) => void) {
  const refused = workspaceAdminsOnly(ctx);
  if (refused) throw new ForbiddenError(refused);
  await ctx.tx.$queryRaw`SELECT id FROM tenants WHERE id = ${ctx.tenant.id} FOR UPDATE`;
  const tenant = await ctx.tx.tenant.findUniqueOrThrow({ where: { id: ctx.tenant.id } });
  const settings = { ...((tenant.settings ?? {}) as Record<string, unknown>) };
  change(settings);
  await ctx.tx.tenant.update({
    where: { id: tenant.id },
    data: { settings: settings as Prisma.InputJsonValue },
  });
}

export type Change = { setting: string; from: unknown; to: unknown };

/** Saves the settings `change` returns changes for, and records each in the same transaction. */
export async function saveAudited(
  ctx: ActionCtx,
  change: (settings: Record<string, unknown>) => Change[],
): Promise<Change[]> {
  let changes: Change[] = [];
  await changeSettings(ctx, (settings) => {
    changes = change(settings).filter((c) => JSON.stringify(c.from) !== JSON.stringify(c.to));
  });
  for (const settingChange of changes)
    await emit(ctx, {
      type: SETTING_CHANGED,
      subjectType: "tenant",
      subjectId: ctx.tenant.id,
      payload: {
        setting: settingChange.setting,
        from: settingChange.from ?? null,
        to: settingChange.to ?? null,
      } as never,
    });
  return changes;
}

/** Sets (or, undefined, removes) one setting, as a change when it moves. */
export function put(settings: Record<string, unknown>, key: string, to: unknown, effective: unknown): Change {
  if (to === undefined) delete settings[key];
  else settings[key] = to;
  return { setting: key, from: effective, to };
}

export const setHumanOnly = defineAction({
  name: "set_human_only",
  description: "Choose which content actions no agent in this workspace may be granted",
  params: perAction(),
  writes: true,
  confirmRecent: true,
  audience: toWorkspace("workspace setting"),
  available: workspaceAdminsOnly,
  async execute(ctx, params) {
    const humanOnly = GRANTABLE.filter((a) => (params as Record<string, boolean>)[a]);
    const was = tenantSettings(ctx.tenant).human_only;
    await saveAudited(ctx, (s) => [put(s, "human_only", humanOnly, was)]);
    return {
      status: 200,
      location: "/settings/agents",
      notice: humanOnly.length
        ? `${plural(humanOnly.length, "action")} kept for people: no agent may use them`
        : "Agents may be granted every content action again",
    };
  },
});
