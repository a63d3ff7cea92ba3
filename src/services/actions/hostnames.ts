// A workspace admin claims or gives up one of the workspace's own hostnames (/settings/hostnames).
// Each change is an event in the same transaction, naming who added or removed which name:
// the page lists them, the workspace's trail of where it answers.
import { z } from "zod";
import { claimHostname, normalHostname, releaseHostname } from "../accounts/hostnames.ts";
import { emit } from "../events.ts";
import { toWorkspace } from "../registry/audiences.ts";
import { type ActionCtx, type Ctx, defineAction } from "../registry/types.ts";

export const HOSTNAMES_PATH = "/settings/hostnames";
export const HOSTNAME_ADDED = "workspace.hostname_added";
export const HOSTNAME_REMOVED = "workspace.hostname_removed";

const adminsOnly = (ctx: Ctx) =>
  ctx.actor.tenantAdmin ? null : "only workspace admins change the workspace's hostnames";

const hostnameParam = z.string().max(300, "at most 300 characters");

async function recordChange(ctx: ActionCtx, type: string, hostname: string) {
  await emit(ctx, { type, subjectType: "tenant", subjectId: ctx.tenant.id, payload: { hostname } });
}

export const addHostname = defineAction({
  name: "add_hostname",
  description: "Claim a hostname for this workspace: requests to it are served as this workspace",
  params: z.object({
    hostname: hostnameParam.meta({
      label: "Hostname",
      description:
        "a name whose DNS points at this server, e.g. cadre.example.com (no https://, no port); one workspace's only",
    }),
  }),
  writes: true,
  confirmRecent: true,
  audience: toWorkspace("workspace hostname"),
  available: adminsOnly,
  async execute(ctx, params) {
    const hostname = normalHostname(params.hostname);
    // Adding a name the workspace holds already is no error: it is as asked.
    if (!(await claimHostname(ctx.tx, ctx.tenant.id, hostname)))
      return {
        status: 200,
        location: HOSTNAMES_PATH,
        notice: `${hostname} is already one of this workspace's hostnames.`,
      };
    await recordChange(ctx, HOSTNAME_ADDED, hostname);
    return {
      status: 201,
      location: HOSTNAMES_PATH,
      notice: `This workspace answers on ${hostname} now, once its DNS points at this server.`,
    };
  },
});

export const removeHostname = defineAction({
  name: "remove_hostname",
  description: "Stop serving this workspace on one of its hostnames",
  params: z.object({
    hostname: hostnameParam.meta({
      label: "Hostname",
      description: "one of this workspace's hostnames, as listed",
      pickedBeside: true,
    }),
  }),
  writes: true,
  confirmRecent: true,
  audience: toWorkspace("workspace hostname"),
  available: adminsOnly,
  destructive: "Requests to this hostname stop reaching the workspace at once.",
  async execute(ctx, params) {
    const hostname = await releaseHostname(ctx.tx, ctx.tenant.id, params.hostname);
    await recordChange(ctx, HOSTNAME_REMOVED, hostname);
    return {
      status: 200,
      location: HOSTNAMES_PATH,
      notice: `This workspace no longer answers on ${hostname}.`,
    };
  },
});
