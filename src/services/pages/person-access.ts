// A person's page, /settings/people/<handle> (listed on /settings/people): their role, whether
// they can sign in, when they were last seen, their agents, and for workspace admins the forms
// that change their role and deactivate or reactivate them.
import { NotFoundError } from "../../lib/errors.ts";
import { plural } from "../../lib/plural.ts";
import { mdEscape } from "../registry/markdown.ts";
import type { PageDef } from "../registry/types.ts";
import { home, studioName, when } from "./format.ts";

/** One button to the other role: the role is the only choice, so the panel needs no form. */
function roleForm(person: { handle: string; tenantAdmin: boolean }) {
  return {
    form: {
      action: "change_role",
      fixed: { role: person.tenantAdmin ? "member" : "admin" },
      label: person.tenantAdmin
        ? `Make @${person.handle} a member (no longer a workspace admin)`
        : `Make @${person.handle} a workspace admin`,
    },
  };
}

export const personAccessPage: PageDef = {
  pattern: "/settings/people/:handle",
  actions: ["change_role", "deactivate_person", "reactivate_person"],
  async resolve(ctx, params) {
    const user = await ctx.db.user.findUnique({
      where: { tenantId_handle: { tenantId: ctx.tenant.id, handle: params.handle! } },
    });
    // Every member may see who is in the workspace and whether they can sign in; only admins
    // get its form, and its actions refuse anyone else whatever the surface.
    if (user?.kind !== "person") throw new NotFoundError(`No person @${params.handle}`);
    return { user };
  },
  async render(ctx, scope) {
    const person = scope.user!;
    const agents = await ctx.db.user.findMany({
      where: { tenantId: ctx.tenant.id, parentId: person.id, kind: "subagent", archivedAt: null },
      select: { handle: true, pausedAt: true, pausedReason: true },
      orderBy: { handle: "asc" },
    });
    const studios = await ctx.db.studio.findMany({
      where: { tenantId: ctx.tenant.id },
      select: { handle: true, name: true },
      orderBy: { name: "asc" },
      take: 200,
    });
    const agentLines = agents.map(
      (agent) =>
        `- [@${agent.handle}](/subagents/${agent.handle})${agent.pausedAt ? ` — paused: ${mdEscape(agent.pausedReason ?? "")}` : ""}`,
    );
    return {
      title: `${person.name} (@${person.handle})`,
      breadcrumb: [home, { label: "People", path: "/settings/people" }, { label: `@${person.handle}` }],
      blocks: [
        {
          md: `**${mdEscape(person.name)}** · ${person.email ? mdEscape(person.email) : "no email"} · ${person.tenantAdmin ? "workspace admin" : "member"} · ${
            person.deactivatedAt ? `**deactivated** ${when(person.deactivatedAt)}: cannot sign in` : "active"
          } · last seen ${person.lastSeenAt ? when(person.lastSeenAt) : "never"}`,
        },
        ...(ctx.actor.tenantAdmin ? [roleForm(person)] : []),
        {
          md: `## Their agents\n\n${agents.length ? `${plural(agents.length, "agent")} of their own:\n\n${agentLines.join("\n")}` : "_They own no agents._"}`,
        },
        ...(!ctx.actor.tenantAdmin || person.deactivatedAt || person.id === ctx.actor.id
          ? []
          : [
              {
                form: {
                  action: "deactivate_person",
                  fixed: {},
                  label: `Deactivate @${person.handle}…`,
                  style: "block" as const,
                  // Their agents are paused unless a studio takes them: its admins manage them then.
                  choices: {
                    agents_to: [
                      { value: "", label: "Nobody: pause them until they come back" },
                      ...studios.map((studio) => ({
                        value: studio.handle,
                        label: `The studio ${studioName(studio)}`,
                      })),
                    ],
                  },
                },
              },
            ]),
      ],
    };
  },
};
