import { tenantSettings } from "../agents/core/settings.ts";
import { capabilityLabel, GRANTABLE } from "../agents/policy/capabilities.ts";
import type { PageDef, Scope } from "../registry/types.ts";
import { home } from "./format.ts";

export const workspaceAgentsPage: PageDef = {
  pattern: "/settings/agents",
  actions: ["set_human_only"],
  resolve: async (): Promise<Scope> => ({}),
  async render(ctx) {
    // Read fresh, not the request's copy: the page that answers a change must show it.
    const tenant = await ctx.db.tenant.findUniqueOrThrow({ where: { id: ctx.tenant.id } });
    const humanOnly = tenantSettings(tenant).human_only;
    const listed = humanOnly.map((a) => `- ${capabilityLabel(a)} (\`${a}\`)`).join("\n");
    return {
      title: "Agents in this workspace",
      breadcrumb: [home, { label: "Subagents", path: "/subagents" }, { label: "Workspace settings" }],
      blocks: [
        {
          md: [
            "## Human-only actions",
            "",
            "Actions marked here are kept for people: no agent in the workspace may be granted them, whatever its owner ticks, and its capabilities page shows them greyed out. Agents that had one keep their other capabilities.",
            "",
            humanOnly.length ? listed : "_None: owners may grant their agents any content action._",
            ctx.actor.tenantAdmin ? "" : "\n_Only workspace admins change these._",
          ].join("\n"),
        },
        {
          form: {
            action: "set_human_only",
            fixed: {},
            label: "Save human-only actions",
            style: "block",
            values: Object.fromEntries(GRANTABLE.map((g) => [g, humanOnly.includes(g)])),
          },
        },
      ],
    };
  },
};
