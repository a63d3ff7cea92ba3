// /settings/tools: where the workspace's tools may be connected from. Every member reads it
// (a refused URL points here); only workspace admins get the form (actions/tool-hosts.ts).
import { TOOL_HOSTS_PATH } from "../actions/tool-hosts.ts";
import { code } from "../registry/markdown.ts";
import { definePage, type Scope } from "../registry/types.ts";
import { home } from "./format.ts";

export const toolHostsPage = definePage({
  pattern: TOOL_HOSTS_PATH,
  actions: ["set_tool_hosts"],
  resolve: async (): Promise<Scope> => ({}),
  async render(ctx) {
    // Read fresh, not the request's copy: the page that answers a change must show it.
    const tenant = await ctx.db.tenant.findUniqueOrThrow({
      where: { id: ctx.tenant.id },
      select: { toolHosts: true },
    });
    const hosts = tenant.toolHosts;
    return {
      title: "Where tools may be connected from",
      breadcrumb: [home, { label: "Connected tools" }],
      blocks: [
        {
          md: `People connect remote MCP servers on their own settings (${code(`/u/${ctx.actor.handle}/settings/tools`)}), studio admins on the studio's. ${
            hosts.length
              ? `Only these hosts may be connected, and a connection to any other stops working at once: ${hosts.map(code).join(", ")}.`
              : "Any public host may be connected: the list below is empty."
          } Private and loopback addresses are refused whatever the list says, when a connection is made and at every call.`,
        },
        ...(ctx.actor.tenantAdmin
          ? [
              {
                form: {
                  action: "set_tool_hosts",
                  fixed: {},
                  label: "Save the list",
                  style: "block" as const,
                  values: { hosts: hosts.join("\n") },
                },
              },
            ]
          : [{ md: "_Only workspace admins change this list._" }]),
      ],
    };
  },
});
