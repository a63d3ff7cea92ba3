// The workspace's list of hosts tools may be connected from (/settings/tools), kept by its
// admins. A change is recorded as a setting change, as /settings/agents records its own.
import { z } from "zod";
import { ForbiddenError, ValidationError } from "../../lib/errors.ts";
import { SETTING_CHANGED } from "../agents/core/settings.ts";
import { emit } from "../events.ts";
import { toWorkspace } from "../registry/audiences.ts";
import { type Ctx, defineAction } from "../registry/types.ts";
import { parseHosts } from "../tools/hosts.ts";

export const TOOL_HOSTS_PATH = "/settings/tools";

const adminsOnly = (ctx: Ctx) =>
  ctx.actor.tenantAdmin ? null : "only workspace admins choose where tools may be connected from";

export const setToolHosts = defineAction({
  name: "set_tool_hosts",
  description:
    "Choose the hosts people and studios may connect tools from (empty: any public host; private addresses never)",
  params: z.object({
    hosts: z.string().max(4000, "at most 4000 characters").default("").meta({
      label: "Hosts",
      multiline: true,
      description: "one a line, e.g. mcp.linear.app or *.example.com; empty: any public host",
    }),
  }),
  writes: true,
  confirmRecent: true,
  audience: toWorkspace("tool host list"),
  available: adminsOnly,
  async execute(ctx, params) {
    const refused = adminsOnly(ctx);
    if (refused) throw new ForbiddenError(refused);
    const { hosts, bad } = parseHosts(params.hosts);
    if (bad.length)
      throw new ValidationError([
        { field: "hosts", message: `not host names: ${bad.slice(0, 5).join(", ")}` },
      ]);
    if (hosts.length > 100) throw new ValidationError([{ field: "hosts", message: "at most 100 hosts" }]);
    const before = await ctx.tx.tenant.findUniqueOrThrow({
      where: { id: ctx.tenant.id },
      select: { toolHosts: true },
    });
    await ctx.tx.tenant.update({ where: { id: ctx.tenant.id }, data: { toolHosts: hosts } });
    if (before.toolHosts.join("\n") !== hosts.join("\n"))
      await emit(ctx, {
        type: SETTING_CHANGED,
        subjectType: "tenant",
        subjectId: ctx.tenant.id,
        payload: { setting: "tool_hosts", from: before.toolHosts, to: hosts } as never,
      });
    return {
      status: 200,
      location: TOOL_HOSTS_PATH,
      notice: hosts.length
        ? `Tools may be connected from ${hosts.length} host${hosts.length === 1 ? "" : "s"} only`
        : "Tools may be connected from any public host",
    };
  },
});
