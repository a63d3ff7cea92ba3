import { z } from "zod";
import { ConflictError, NotFoundError, ValidationError } from "../../lib/errors.ts";
import { plural } from "../../lib/plural.ts";
import { requireScope } from "../access.ts";
import { unreadOf } from "../notifications.ts";
import { toSelf, toWorkspace } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { writeScratchpad } from "../scratchpad.ts";
import { createApiToken } from "../tokens.ts";
import { idSchema, optionalText, text } from "../validation.ts";

export const dismiss = defineAction({
  name: "dismiss",
  description: "Dismiss one notification",
  params: z.object({ id: idSchema.meta({ description: "the notification's id", pickedBeside: true }) }),
  writes: true,
  audience: toSelf("notification dismissal"),
  async execute(ctx, p) {
    const n = await ctx.tx.notification.updateMany({
      where: { id: p.id, ...unreadOf(ctx.actor.id, ctx.tenant.id) },
      data: { dismissedAt: new Date() },
    });
    if (!n.count) throw new NotFoundError(`No unread notification ${p.id}`);
    return { status: 200, location: "/notifications", notice: "Dismissed" };
  },
});

export const dismissAll = defineAction({
  name: "dismiss_all",
  description: "Dismiss all your notifications",
  params: z.object({}),
  writes: true,
  audience: toSelf("notification dismissal"),
  async execute(ctx) {
    const n = await ctx.tx.notification.updateMany({
      where: unreadOf(ctx.actor.id, ctx.tenant.id),
      data: { dismissedAt: new Date() },
    });
    return {
      status: 200,
      location: "/notifications",
      notice: `Dismissed ${plural(n.count, "notification")}`,
    };
  },
});

export const searchAction = defineAction({
  name: "search",
  description: "Search notes, decisions, commitments and comments in your studios",
  params: z.object({ query: text(200) }),
  writes: false,
  async execute(_ctx, p) {
    return { status: 200, location: `/search?${new URLSearchParams({ q: p.query })}`, notice: "" };
  },
});

export const updateProfile = defineAction({
  name: "update_profile",
  description: "Change your display name or bio",
  params: z.object({
    // A prefilled form sends every field: emptied, the bio clears and the name is refused.
    name: optionalText(80).meta({ clears: true }),
    bio: optionalText(2000, "a few words about you").meta({ multiline: true, clears: true }),
  }),
  writes: true,
  audience: toWorkspace("profile"),
  current: (scope) => ({ name: scope.user?.name, bio: scope.user?.bio }),
  async execute(ctx, p, scope) {
    const user = requireScope(scope.user, "user");
    if (p.name === undefined && p.bio === undefined)
      throw new ValidationError([{ field: "", message: "give a name or a bio to change" }]);
    if (p.name !== undefined && !p.name)
      throw new ValidationError([{ field: "name", message: "must not be empty" }]);
    await ctx.tx.user.update({
      where: { id: user.id },
      data: { ...(p.name !== undefined && { name: p.name }), ...(p.bio !== undefined && { bio: p.bio }) },
    });
    return { status: 200, location: `/u/${user.handle}/settings`, notice: "Profile updated" };
  },
});

const SCOPE_LABELS = {
  read: "read: pages only",
  act: "act: pages and actions, not tokens or keys",
  manage: "manage: also create and revoke tokens and keys",
};

export const createApiTokenAction = defineAction({
  name: "create_api_token",
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
  audience: toSelf("API token"),
  async execute(ctx, p, scope) {
    const user = requireScope(scope.user, "user");
    const expiresAt = p.expires_in_days ? new Date(Date.now() + p.expires_in_days * 86_400_000) : null;
    const { token } = await createApiToken(ctx.tx, ctx.tenant.id, user.id, p.name, {
      scope: p.scope,
      expiresAt,
    });
    return {
      status: 201,
      location: `/u/${user.handle}/settings/tokens`,
      notice: `Token “${p.name}” created (${p.scope}${expiresAt ? `, expires ${expiresAt.toISOString().slice(0, 10)}` : ""}). Copy it now: it will not be shown again.`,
      secret: token,
    };
  },
});

export const revokeApiToken = defineAction({
  name: "revoke_api_token",
  manage: true,
  destructive: "Anything that signs in with this token is refused from now on. This cannot be undone.",
  description: "Revoke one of your API tokens",
  params: z.object({ id: idSchema.meta({ description: "the token's id", pickedBeside: true }) }),
  writes: true,
  audience: toSelf("API token"),
  async execute(ctx, p, scope) {
    const user = requireScope(scope.user, "user");
    const t = await ctx.tx.apiToken.findFirst({
      where: { id: p.id, userId: user.id, tenantId: ctx.tenant.id },
    });
    if (!t) throw new NotFoundError(`No token ${p.id}`);
    if (t.revokedAt) throw new ConflictError(`Token “${t.name}” is already revoked`);
    await ctx.tx.apiToken.update({ where: { id: t.id }, data: { revokedAt: new Date() } });
    return { status: 200, location: `/u/${user.handle}/settings/tokens`, notice: `Revoked “${t.name}”` };
  },
});

export const updateScratchpad = defineAction({
  name: "update_scratchpad",
  description: "Replace your scratchpad: notes to yourself that you will see at the start of every run",
  params: z.object({ text: z.string().max(4000, "at most 4000 characters").meta({ multiline: true }) }),
  writes: true,
  audience: toSelf("scratchpad"),
  available: (ctx) => (ctx.actor.kind === "subagent" ? null : "only subagents have a scratchpad"),
  async execute(ctx, p) {
    // The scratchpad carries the label of what its writer had read (added to what it carried),
    // so a later run reading it takes that in too: memory cannot launder content.
    const write = { tenantId: ctx.tenant.id, agentId: ctx.actor.id, authorId: ctx.actor.id };
    await writeScratchpad(
      ctx.tx,
      { ...write, kind: "write", text: p.text, runId: ctx.run?.id },
      ctx.flow?.label() ?? [],
    );
    return { status: 200, location: "/whoami", notice: "Scratchpad saved" };
  },
});
