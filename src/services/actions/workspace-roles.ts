// A person's role in the workspace (member or admin), changed by a workspace admin on the
// person's page (/settings/people/<handle>). The workspace is never left without an admin
// (accounts/admins.ts, the rule deactivation obeys too); the person is told by mail and the
// change is in the workspace's audit trail, both in the change's transaction.
import { z } from "zod";
import { ConflictError } from "../../lib/errors.ts";
import { ensureAnotherAdmin } from "../accounts/admins.ts";
import { recordSecurityEvent } from "../accounts/security-events.ts";
import { toWorkspace } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { personPath } from "./deactivation.ts";

export type WorkspaceRole = "member" | "admin";

const roleOf = (person: { tenantAdmin: boolean }): WorkspaceRole => (person.tenantAdmin ? "admin" : "member");

export const changeRole = defineAction({
  name: "change_role",
  needs: ["user"],
  description:
    "Change this person's role in the workspace: admins manage its people, hostnames and settings; members do not",
  params: z.object({
    role: z.enum(["member", "admin"]).meta({
      label: "Workspace role",
      description: "admin or member; the workspace always keeps at least one active admin",
    }),
  }),
  writes: true,
  confirmRecent: true,
  audience: toWorkspace("role change"),
  available: (ctx, scope) =>
    !ctx.actor.tenantAdmin
      ? "only workspace admins change people's roles"
      : scope.user?.kind !== "person"
        ? "only people have a workspace role"
        : null,
  current: (scope) => ({ role: scope.user ? roleOf(scope.user) : "member" }),
  async execute(ctx, params, scope) {
    const { user: person } = scope;
    const from = roleOf(person);
    if (from === params.role) throw new ConflictError(`@${person.handle} is already a workspace ${from}.`);
    if (params.role === "member") await ensureAnotherAdmin(ctx.tx, person, "demoted");
    // Conditional on the role it had when the page was read: two admins changing it at once change it once.
    const changed = await ctx.tx.user.updateMany({
      where: { id: person.id, tenantId: ctx.tenant.id, kind: "person", tenantAdmin: from === "admin" },
      data: { tenantAdmin: params.role === "admin" },
    });
    if (!changed.count)
      throw new ConflictError(`@${person.handle}'s role changed meanwhile: reload the page.`);
    await recordSecurityEvent(ctx.tx, {
      tenantId: ctx.tenant.id,
      userId: person.id,
      actorId: ctx.actor.id,
      kind: "role_changed",
      detail: `Your role in the workspace changed from ${from} to ${params.role} by @${ctx.actor.handle}.`,
      ...(ctx.origin && { origin: ctx.origin }),
    });
    return {
      status: 200,
      location: personPath(person.handle),
      notice:
        person.id === ctx.actor.id
          ? `You are a workspace ${params.role} now.`
          : `@${person.handle} is a workspace ${params.role} now; they are told by mail.`,
    };
  },
});
