// /settings/people: everyone in the workspace (people, not agents) with their role, whether
// they can sign in, when they were last seen and the agents they own, each linking to their
// own page, where admins change their role or let them go. Every member may read the list
// (who is in the workspace is no secret inside it, as in Mattermost or Outline); admins also
// get the addresses, the way to invite, and the workspace's audit trail of account events.
import type { User } from "../../generated/prisma/client.ts";
import { plural } from "../../lib/plural.ts";
import { recentSecurityEvents } from "../accounts/security-events.ts";
import { personPath } from "../actions/deactivation.ts";
import { link, mdEscape } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage, type Query } from "../registry/types.ts";
import { home, type Paging, pager, paging, when } from "./format.ts";

export const PEOPLE_PATH = "/settings/people";
const AUDIT_SHOWN = 30;

type Person = Pick<User, "id" | "handle" | "name" | "email" | "tenantAdmin" | "deactivatedAt" | "lastSeenAt">;
type AuditEvent = Awaited<ReturnType<typeof recentSecurityEvents>>[number];

interface PeopleData {
  admin: boolean;
  people: Person[];
  total: number;
  paged: Paging;
  /** Each listed person's own agents' handles, by the person's id. */
  agents: Map<string, string[]>;
  /** The workspace's account events, for admins only. */
  events: AuditEvent[];
}

async function loadPeople(ctx: Ctx, query: Query): Promise<PeopleData> {
  const paged = paging(query);
  const where = { tenantId: ctx.tenant.id, kind: "person" as const, archivedAt: null };
  const [people, total] = await Promise.all([
    ctx.db.user.findMany({
      where,
      select: {
        id: true,
        handle: true,
        name: true,
        email: true,
        tenantAdmin: true,
        deactivatedAt: true,
        lastSeenAt: true,
      },
      // Admins first, then by name: who to ask is the first thing a member looks for.
      orderBy: [{ tenantAdmin: "desc" }, { name: "asc" }, { handle: "asc" }],
      skip: paged.skip,
      take: paged.take,
    }),
    ctx.db.user.count({ where }),
  ]);
  const owned = await ctx.db.user.findMany({
    where: {
      tenantId: ctx.tenant.id,
      kind: "subagent",
      archivedAt: null,
      parentId: { in: people.map((person) => person.id) },
    },
    select: { handle: true, parentId: true },
    orderBy: { handle: "asc" },
  });
  const agents = new Map<string, string[]>();
  for (const agent of owned)
    if (agent.parentId) agents.set(agent.parentId, [...(agents.get(agent.parentId) ?? []), agent.handle]);
  const admin = ctx.actor.tenantAdmin;
  const events = admin ? await recentSecurityEvents(ctx.db, ctx.tenant.id, AUDIT_SHOWN) : [];
  return { admin, people, total, paged, agents, events };
}

function personRow(person: Person, agents: string[], admin: boolean): string {
  const cells = [
    `${link(person.name, personPath(person.handle))} (@${person.handle})`,
    ...(admin ? [person.email ? mdEscape(person.email) : "—"] : []),
    person.tenantAdmin ? "admin" : "member",
    person.deactivatedAt ? `deactivated ${when(person.deactivatedAt)}` : "active",
    person.lastSeenAt ? when(person.lastSeenAt) : "never",
    agents.map((handle) => link(`@${handle}`, `/subagents/${handle}`)).join(", ") || "—",
  ];
  return `| ${cells.join(" | ")} |`;
}

function peopleTable(data: PeopleData): string {
  const header = data.admin
    ? ["| person | email | role | status | last seen | their agents |", "|---|---|---|---|---|---|"]
    : ["| person | role | status | last seen | their agents |", "|---|---|---|---|---|"];
  const rows = data.people.map((person) => personRow(person, data.agents.get(person.id) ?? [], data.admin));
  return [...header, ...rows].join("\n");
}

function intro(data: PeopleData): string {
  const count = `${plural(data.total, "person", "people")} in this workspace.`;
  return data.admin
    ? `${count} Open a person to change their role or deactivate them. ${link("Invite people", "/settings/invitations")} · ${link("Hostnames", "/settings/hostnames")} · ${link("Sign-in", "/settings/sign-in")} · ${link("Agent settings", "/settings/agents")}`
    : `${count} _Only workspace admins change roles and invite people; you see the list as it is._`;
}

function auditLine(event: AuditEvent): string {
  const actorPart = event.actor ? ` (by @${event.actor.handle})` : "";
  return `- ${when(event.createdAt)} · @${event.user.handle} · **${event.kind.replace(/_/g, " ")}**${actorPart}: ${mdEscape(event.detail)}`;
}

/** Pure: the list as markdown blocks. */
export function peopleView(data: PeopleData): Block[] {
  const blocks: Block[] = [
    { md: intro(data) },
    { md: data.people.length ? peopleTable(data) : "_Nobody on this page._" },
    { md: pager(PEOPLE_PATH, data.paged, data.total) },
  ];
  if (data.admin)
    blocks.push({
      md: `## Account events\n\nThe workspace's audit trail: sign-ins from new browsers, password changes, role changes, deactivations (each mailed to the person concerned), newest first.\n\n${data.events.map(auditLine).join("\n") || "_None yet._"}`,
    });
  return blocks;
}

export const peoplePage = definePage({
  pattern: PEOPLE_PATH,
  actions: [],
  resolve: async () => ({}),
  async render(ctx, _scope, query) {
    return {
      title: "People",
      breadcrumb: [home, { label: "People" }],
      blocks: peopleView(await loadPeople(ctx, query)),
    };
  },
});
