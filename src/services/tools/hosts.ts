// Which hosts a workspace's tool connections may point at: its admins' allow-list on the
// tenant (empty: any public host). Checked where a connection is made and again at every use,
// so a host taken off the list stops being called at once; private addresses are refused
// before this, whatever the list says (client.ts, checkResolvedUrl).
import type { Db } from "../../db/prisma.ts";

/** `mcp.example.com`, or `*.example.com` for the host and every name under it. */
const ENTRY = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** The entries of a pasted list (commas, spaces or lines between them), or the ones that are not host names. */
export function parseHosts(raw: string): { hosts: string[]; bad: string[] } {
  const entries = raw
    .split(/[\s,]+/)
    .map((entry) => entry.trim().toLowerCase().replace(/\.+$/, ""))
    .filter(Boolean);
  const unique = [...new Set(entries)];
  return { hosts: unique.filter((e) => ENTRY.test(e)), bad: unique.filter((e) => !ENTRY.test(e)) };
}

export function hostAllowed(hosts: readonly string[], url: URL): boolean {
  if (!hosts.length) return true;
  const host = url.hostname.toLowerCase().replace(/\.+$/, "");
  return hosts.some((entry) =>
    entry.startsWith("*.") ? host === entry.slice(2) || host.endsWith(entry.slice(1)) : host === entry,
  );
}

/** Why the workspace refuses this URL's host, or null when its list allows it. */
export async function hostRefusal(db: Db, tenantId: string, raw: string): Promise<string | null> {
  const tenant = await db.tenant.findUniqueOrThrow({ where: { id: tenantId }, select: { toolHosts: true } });
  const url = new URL(raw);
  if (hostAllowed(tenant.toolHosts, url)) return null;
  return `${url.hostname} is not on this workspace's list of hosts tools may be connected from (its admins keep it on /settings/tools)`;
}
