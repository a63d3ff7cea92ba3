// A workspace's own hostnames (workspace_hostnames), claimed by its admins on /settings/hostnames:
// the tenancy plugin serves a request whose Host is one of them as that workspace. A hostname
// names one workspace at most, so a claim is refused when another holds it, in the same words
// whoever holds it ("taken"). The base domain is set once at start, like the keyring, rather
// than threaded through every action's context.
import type { Db } from "../../db/prisma.ts";
import { ValidationError } from "../../lib/errors.ts";

/** How many hostnames one workspace may claim: a handful covers every real need. */
export const HOSTNAME_LIMIT = 20;

const FIELD = { field: "hostname", label: "Hostname" };
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

let baseDomain = "localhost";

/** Called by the app at start with the validated BASE_DOMAIN. */
export function configureHostnames(config: { BASE_DOMAIN: string }) {
  baseDomain = config.BASE_DOMAIN.toLowerCase().replace(/\.$/, "");
}

const refuse = (message: string) => new ValidationError([{ ...FIELD, message }]);

/**
 * The hostname as stored and looked up (lower-cased, no trailing dot), or a 400 naming the
 * field. No scheme, path or port: a workspace answers on its hostname whatever the port, as
 * the tenancy plugin looks hosts up without one. No IP address and nothing under localhost or
 * BASE_DOMAIN: those name the default workspace or a workspace's handle already.
 */
export function normalHostname(input: string): string {
  const hostname = input.trim().toLowerCase().replace(/\.$/, "");
  if (!hostname) throw refuse("enter a hostname, for example cadre.example.com");
  if (/[/:@?#\s]/.test(hostname))
    throw refuse(`“${input.trim()}” is not a bare hostname: leave out https://, any path and the port`);
  const labels = hostname.split(".");
  if (hostname.length > 253 || labels.length < 2 || !labels.every((label) => LABEL.test(label)))
    throw refuse(
      `“${hostname}” is not a hostname: two or more labels of letters, digits and inner hyphens, for example cadre.example.com`,
    );
  if (/^\d+$/.test(labels.at(-1) ?? "")) throw refuse("an IP address cannot be claimed: use a hostname");
  const under = (domain: string) => hostname === domain || hostname.endsWith(`.${domain}`);
  if (under(baseDomain))
    throw refuse(
      `“${hostname}” is under ${baseDomain}, where workspaces are reached by their handle already`,
    );
  if (under("localhost")) throw refuse("localhost names this machine, not a workspace");
  return hostname;
}

/** The workspace's hostnames, oldest first. */
export async function workspaceHostnames(db: Db, tenantId: string) {
  return db.workspaceHostname.findMany({ where: { tenantId }, orderBy: { createdAt: "asc" }, take: 100 });
}

/**
 * Claims `hostname` for the workspace: false when it held it already (nothing to do), a 400
 * saying why not otherwise ("taken" when another workspace holds it).
 */
export async function claimHostname(tx: Db, tenantId: string, hostname: string): Promise<boolean> {
  // The tenant's row locked: two claims at once count the limit once.
  await tx.$queryRaw`SELECT id FROM tenants WHERE id = ${tenantId} FOR UPDATE`;
  if (await tx.workspaceHostname.findFirst({ where: { hostname, tenantId } })) return false;
  if ((await tx.workspaceHostname.count({ where: { tenantId } })) >= HOSTNAME_LIMIT)
    throw refuse(`a workspace has at most ${HOSTNAME_LIMIT} hostnames: remove one first`);
  // Nothing is written when the name is held: the primary key settles a race between workspaces.
  const claimed = await tx.workspaceHostname.createMany({
    data: [{ hostname, tenantId }],
    skipDuplicates: true,
  });
  if (!claimed.count) throw refuse(`${hostname} is taken`);
  return true;
}

/** Gives up one of the workspace's hostnames; a 400 when it holds no such name (another's or none). */
export async function releaseHostname(tx: Db, tenantId: string, input: string): Promise<string> {
  // Not validated as a new claim is: a row an operator inserted by hand can be removed too.
  const hostname = input.trim().toLowerCase().replace(/\.$/, "");
  const released = await tx.workspaceHostname.deleteMany({ where: { hostname, tenantId } });
  if (!released.count) throw refuse(`${hostname} is not one of this workspace's hostnames`);
  return hostname;
}
