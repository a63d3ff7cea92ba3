// Personal API tokens: made once and shown once, revoked by their owner (pages/api-token.ts, settings.ts).
import { z } from "zod";
import { ConflictError, NotFoundError } from "../../lib/errors.ts";
import { toSelf } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { createApiToken } from "../tokens.ts";
import { idSchema, text } from "../validation.ts";

const SCOPE_LABELS = {
  read: "read: pages only",
  act: "act: pages and actions, not tokens or keys",
  manage: "manage: also create and revoke tokens and keys",
};

export const createApiTokenAction = defineAction({
  name: "create_api_token",
  needs: ["user"],
  description: "Create a personal API token (shown once)",
  manage: true,
  params: z.object({
    name: text(80).describe("what the token is for, e.g. “laptop script”"),
    scope: z
      .enum(["read", "act", "manage"])
      .default("act")
      .meta({ description: "what it may do", optionLabels: SCOPE_LABELS }),
    expires_in_days: z
      .number()
      .int("a whole number")
      .min(1, "at least 1")
      .max(365, "at most 365")
      .optional()
      .meta({ label: "Expires in (days)", description: "empty: until you revoke it" }),
  }),
  writes: true,
  confirmRecent: true,
  audience: toSelf("API token"),
  async execute(ctx, params, scope) {
    const { user } = scope;
    const expiresAt = params.expires_in_days
      ? new Date(Date.now() + params.expires_in_days * 86_400_000)
      : null;
    const { token } = await createApiToken(ctx.tx, ctx.tenant.id, user.id, params.name, {
      scope: params.scope,
      expiresAt,
    });
    return {
      status: 201,
      location: `/u/${user.handle}/settings/tokens`,
      notice: `Token “${params.name}” created (${params.scope}${expiresAt ? `, expires ${expiresAt.toISOString().slice(0, 10)}` : ""}). Copy it now: it will not be shown again.`,
      secret: token,
    };
  },
});

export const revokeApiToken = defineAction({
  name: "revoke_api_token",
  needs: ["user"],
  manage: true,
  destructive: "Anything that signs in with this token is refused from now on. This cannot be undone.",
  description: "Revoke one of your API tokens",
  params: z.object({ id: idSchema.meta({ description: "the token's id", pickedBeside: true }) }),
  writes: true,
  audience: toSelf("API token"),
  async execute(ctx, params, scope) {
    const { user } = scope;
    const token = await ctx.tx.apiToken.findFirst({
      where: { id: params.id, userId: user.id, tenantId: ctx.tenant.id },
    });
    if (!token) throw new NotFoundError(`No token ${params.id}`);
    if (token.revokedAt) throw new ConflictError(`Token “${token.name}” is already revoked`);
    await ctx.tx.apiToken.update({ where: { id: token.id }, data: { revokedAt: new Date() } });
    return { status: 200, location: `/u/${user.handle}/settings/tokens`, notice: `Revoked “${token.name}”` };
  },
});
