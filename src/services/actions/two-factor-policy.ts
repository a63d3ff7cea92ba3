// A workspace admin's two-factor requirement (/settings/sign-in): not required, admins only, or
// everyone. It is read at each password sign-in (accounts/sign-in.ts stageFor): a person it
// now covers who has no second factor is asked to set one up then, and is mailed now so the
// step does not surprise them. Sessions already signed in are left as they are.
import { z } from "zod";
import type { TwoFactorPolicy } from "../../generated/prisma/client.ts";
import { POLICY_LABELS, policyRequires } from "../accounts/second-factor.ts";
import { recordSecurityEvent } from "../accounts/security-events.ts";
import { emit } from "../events.ts";
import { toWorkspace } from "../registry/audiences.ts";
import { type ActionCtx, defineAction } from "../registry/types.ts";

export const SIGN_IN_PATH = "/settings/sign-in";
export const TWO_FACTOR_POLICY_SET = "workspace.two_factor_policy_set";

/** Active people the new policy covers and the old did not, who have no second factor yet. */
async function newlyAsked(ctx: ActionCtx, before: TwoFactorPolicy, after: TwoFactorPolicy) {
  const people = await ctx.tx.user.findMany({
    where: { tenantId: ctx.tenant.id, kind: "person", deactivatedAt: null, archivedAt: null },
    select: { id: true, tenantAdmin: true },
  });
  const covered = people.filter((p) => policyRequires(after, p) && !policyRequires(before, p));
  if (!covered.length) return [];
  const ids = covered.map((p) => p.id);
  const [totp, passkeys] = await Promise.all([
    ctx.tx.totpFactor.findMany({
      where: { tenantId: ctx.tenant.id, userId: { in: ids }, confirmedAt: { not: null } },
      select: { userId: true },
    }),
    ctx.tx.passkey.findMany({
      where: { tenantId: ctx.tenant.id, userId: { in: ids } },
      select: { userId: true },
      distinct: ["userId"],
    }),
  ]);
  const protectedIds = new Set([...totp, ...passkeys].map((row) => row.userId));
  return covered.filter((p) => !protectedIds.has(p.id));
}

export const setTwoFactorPolicy = defineAction({
  name: "set_two_factor_policy",
  description: "Set whether the workspace requires two-factor sign-in: of nobody, of admins, or of everyone",
  params: z.object({
    policy: z.enum(["off", "admins", "everyone"]).meta({
      label: "Two-factor sign-in",
      description: "people it covers who have no second factor set one up at their next sign-in",
      optionLabels: POLICY_LABELS,
    }),
  }),
  writes: true,
  confirmRecent: true,
  audience: toWorkspace("sign-in settings"),
  available: (ctx) =>
    ctx.actor.tenantAdmin ? null : "only workspace admins change how people sign in to the workspace",
  async execute(ctx, params) {
    const before = ctx.tenant.twoFactorPolicy;
    const after = params.policy;
    if (before === after)
      return {
        status: 200,
        location: SIGN_IN_PATH,
        notice: `Unchanged: ${POLICY_LABELS[after].toLowerCase()}.`,
      };
    await ctx.tx.tenant.update({ where: { id: ctx.tenant.id }, data: { twoFactorPolicy: after } });
    const asked = await newlyAsked(ctx, before, after);
    for (const person of asked)
      await recordSecurityEvent(ctx.tx, {
        tenantId: ctx.tenant.id,
        userId: person.id,
        actorId: ctx.actor.id,
        kind: "two_factor_policy_changed",
        detail: `${ctx.tenant.name} now requires two-factor sign-in (${POLICY_LABELS[after].toLowerCase()}, set by @${ctx.actor.handle}). At your next sign-in you will be asked to set up an authenticator app; you can do it now on your security page, or add a passkey there.`,
        ...(ctx.origin && { origin: ctx.origin }),
      });
    await emit(ctx, {
      type: TWO_FACTOR_POLICY_SET,
      subjectType: "tenant",
      subjectId: ctx.tenant.id,
      payload: { from: before, to: after, asked: asked.length },
    });
    const told = asked.length
      ? ` ${asked.length} ${asked.length === 1 ? "person without a second factor was" : "people without a second factor were"} mailed: they set one up at their next sign-in.`
      : "";
    return {
      status: 200,
      location: SIGN_IN_PATH,
      notice: `Two-factor sign-in: ${POLICY_LABELS[after].toLowerCase()}.${told}`,
    };
  },
});
