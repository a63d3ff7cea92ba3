// /settings/hostnames: the hostnames this workspace answers on besides <handle>.<BASE_DOMAIN>,
// and who added or removed which. Every member may read it (where the workspace answers is no
// secret inside it); only workspace admins get its forms, and its actions refuse anyone else.
import { HOSTNAME_LIMIT, workspaceHostnames } from "../accounts/hostnames.ts";
import { HOSTNAME_ADDED, HOSTNAME_REMOVED, HOSTNAMES_PATH } from "../actions/hostnames.ts";
import { code, link } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage } from "../registry/types.ts";
import { home, when } from "./format.ts";

const CHANGES_SHOWN = 20;

interface HostnamesData {
  admin: boolean;
  hostnames: { hostname: string; createdAt: Date }[];
  changes: { type: string; hostname: string; at: Date; by: string }[];
}

async function loadHostnames(ctx: Ctx): Promise<HostnamesData> {
  const [hostnames, events] = await Promise.all([
    workspaceHostnames(ctx.db, ctx.tenant.id),
    ctx.db.event.findMany({
      where: { tenantId: ctx.tenant.id, type: { in: [HOSTNAME_ADDED, HOSTNAME_REMOVED] } },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: CHANGES_SHOWN,
      include: { actor: { select: { handle: true } } },
    }),
  ]);
  const changes = events.map((event) => ({
    type: event.type,
    hostname: String((event.payload as { hostname?: unknown }).hostname ?? ""),
    at: event.createdAt,
    by: event.actor.handle,
  }));
  return { admin: ctx.actor.tenantAdmin, hostnames, changes };
}

function listBlocks(data: HostnamesData): Block[] {
  if (!data.hostnames.length)
    return [{ md: "_None yet: the workspace answers on its handle's address only._" }];
  return data.hostnames.flatMap((row): Block[] => [
    { md: `- ${code(row.hostname)} · added ${when(row.createdAt)}` },
    ...(data.admin
      ? [
          {
            form: {
              action: "remove_hostname",
              fixed: { hostname: row.hostname },
              label: `Remove ${row.hostname}`,
            },
          },
        ]
      : []),
  ]);
}

/** Pure: the page's blocks from what loadHostnames read. */
export function hostnamesView(data: HostnamesData): Block[] {
  const changeLines = data.changes.map(
    (change) =>
      `- ${when(change.at)} · @${change.by} ${change.type === HOSTNAME_ADDED ? "added" : "removed"} ${code(change.hostname)}`,
  );
  return [
    {
      md: [
        "Besides its handle's address, this workspace answers on the hostnames below: point a name's DNS at this server and add it here. A hostname belongs to one workspace only; an IP address, localhost and names under the base domain cannot be claimed.",
        data.admin
          ? `Up to ${HOSTNAME_LIMIT}. ${link("People", "/settings/people")} · ${link("Agent settings", "/settings/agents")}`
          : "_Only workspace admins add or remove hostnames; you see them as they are._",
      ].join("\n\n"),
    },
    { md: "## Hostnames" },
    ...listBlocks(data),
    { md: `## Changes\n\n${changeLines.join("\n") || "_None yet._"}` },
  ];
}

export const hostnamesPage = definePage({
  pattern: HOSTNAMES_PATH,
  actions: ["add_hostname", "remove_hostname"],
  resolve: async () => ({}),
  async render(ctx) {
    return {
      title: "Hostnames",
      breadcrumb: [home, { label: "Hostnames" }],
      blocks: hostnamesView(await loadHostnames(ctx)),
    };
  },
});
