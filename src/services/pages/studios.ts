import { plural } from "../../lib/plural.ts";
import { loadStudio, studiosSeenByViewers } from "../access.ts";
import { unreadOf } from "../notifications.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage, defineReadPage, type StudioScope } from "../registry/types.ts";
import { home, type Paging, PER_PAGE, pager, paging, studioCrumbs, when, who } from "./format.ts";
import { type NoteLine, type StudioOverview, studioOverview } from "./studio-reads.ts";
import { watchBlocks } from "./subscriptions.ts";

async function myStudios(ctx: Ctx, paged: Paging) {
  const seen = await studiosSeenByViewers(ctx);
  const where = { userId: ctx.actor.id, tenantId: ctx.tenant.id, ...(seen && { studioId: { in: seen } }) };
  const [memberships, total] = await Promise.all([
    ctx.db.studioMember.findMany({
      where,
      include: { studio: true },
      orderBy: { studio: { name: "asc" } },
      skip: paged.skip,
      take: paged.take,
    }),
    ctx.db.studioMember.count({ where }),
  ]);
  return { memberships, total };
}

export const homePage = definePage({
  pattern: "/",
  actions: [],
  resolve: async () => ({}),
  async render(ctx) {
    const [{ memberships, total }, unread] = await Promise.all([
      myStudios(ctx, paging({})),
      ctx.db.notification.count({
        where: unreadOf(ctx.actor.id, ctx.tenant.id),
      }),
    ]);
    const studios = memberships.length
      ? memberships
          .map((m) => `- ${link(m.studio.name, `/studios/${m.studio.handle}`)} — ${m.role}`)
          .join("\n")
      : `You are not in any studio yet. ${link("Create or join one", "/studios")}.`;
    return {
      title: `Welcome to ${ctx.tenant.name}`,
      breadcrumb: [{ label: "Home" }],
      blocks: [
        { md: `Signed in as ${who(ctx.actor)}.` },
        {
          md: `## Your studios\n\n${studios}${total > memberships.length ? `\n\n${link(`All ${total} studios`, "/studios")}` : ""}`,
        },
        {
          md: `## Elsewhere\n\n- ${link(`Notifications (${unread} unread)`, "/notifications")}\n- ${link("Search", "/search")}\n- ${link("Who am I", "/whoami")}\n- ${link("Your settings and API tokens", `/u/${ctx.actor.handle}/settings`)}`,
        },
      ],
    };
  },
});

export const studiosPage = definePage({
  pattern: "/studios",
  actions: ["create_studio", "join_studio"],
  resolve: async () => ({}),
  async render(ctx, _scope, query) {
    const paged = paging(query);
    const { memberships, total } = await myStudios(ctx, paged);
    const list = memberships.length
      ? memberships
          .map(
            (m) =>
              `- ${link(m.studio.name, `/studios/${m.studio.handle}`)} (\`${m.studio.handle}\`) — you are ${m.role}`,
          )
          .join("\n")
      : "_You are not a member of any studio yet. Create one, or join with an invite code._";
    return {
      title: "Studios",
      breadcrumb: [home, { label: "Studios" }],
      blocks: [{ md: list }, { md: pager("/studios", paged, total) }],
    };
  },
});

export const studioPage = defineReadPage({
  pattern: "/studios/:studio",
  actions: [
    "create_note",
    "create_decision",
    "create_commitment",
    "update_studio",
    "subscribe",
    "unsubscribe",
    "create_subagent",
  ],
  resolve: async (ctx, params) => ({ studio: await loadStudio(ctx, params.studio) }),
  async view(ctx, params) {
    const { studio: s, overview } = await studioOverview(ctx, params.studio);
    const watch = await watchBlocks(ctx, { studio: s });
    const agents = studioAgentBlocks(ctx, s, overview.agents);
    const { pinned, notes, decisions, commitments, counts } = overview;
    const base = `/studios/${s.handle}`;
    const more = (n: number, shown: number, path: string, what: string) =>
      n > shown ? `\n\n${link(`All ${n} ${what}`, path)}` : "";
    const noteLine = (n: NoteLine) =>
      `- ${link(n.title || "Untitled note", `${base}/notes/${n.id}`)} — ${who(n.author)}, ${when(n.createdAt)}${n.pinned ? " · pinned" : ""}`;
    const view = {
      title: s.name,
      breadcrumb: [home, { label: "Studios", path: "/studios" }, { label: s.name }],
      blocks: [
        {
          md: `${s.description ? `${quote(s.description)}\n\n` : ""}Handle \`${s.handle}\` · you are ${s.role} · ${link(`${counts.members} members`, `${base}/members`)}`,
        },
        ...watch,
        ...(pinned.length
          ? [
              {
                md: `## Pinned\n\n${pinned.map((n) => `- ${link(n.title || "Untitled note", `${base}/notes/${n.id}`)}`).join("\n")}`,
              },
            ]
          : []),
        {
          md: `## Notes\n\n${notes.length ? notes.map(noteLine).join("\n") : "_No notes yet._"}${more(counts.notes, notes.length, `${base}/notes`, "notes")}`,
        },
        {
          md: `## Decisions\n\n${
            decisions.length
              ? decisions
                  .map(
                    (d) =>
                      `- ${link(d.question, `${base}/decisions/${d.id}`)} — ${who(d.author)}, ${when(d.createdAt)}`,
                  )
                  .join("\n")
              : "_No decisions yet._"
          }${more(counts.decisions, decisions.length, `${base}/decisions`, "decisions")}`,
        },
        {
          md: `## Commitments\n\n${
            commitments.length
              ? commitments
                  .map(
                    (c) =>
                      `- ${link(c.title, `${base}/commitments/${c.id}`)} — ${c.joined}/${c.criticalMass} joined${c.activated ? " · **active**" : ""}`,
                  )
                  .join("\n")
              : "_No commitments yet._"
          }${more(counts.commitments, commitments.length, `${base}/commitments`, "commitments")}`,
        },
        ...agents,
      ],
    };
    return { scope: { studio: s }, view };
  },
});

/** The agents the studio owns; for its admins, a form to create one and links to its keys and usage. */
function studioAgentBlocks(ctx: Ctx, s: StudioScope, agents: StudioOverview["agents"]): Block[] {
  const admin = s.role === "admin" && ctx.actor.kind === "person";
  const list = agents.length
    ? agents
        .map(
          (a) => `- ${link(a.name, admin ? `/subagents/${a.handle}` : `/u/${a.handle}`)} (\`@${a.handle}\`)`,
        )
        .join("\n")
    : "_None yet._";
  const base = `/studios/${s.handle}`;
  const blocks: Block[] = [
    {
      md: `## Its agents\n\nAgents the studio owns: every admin manages them, and they act only here.${admin ? ` ${link("Usage", `${base}/usage`)} · ${link("Model API keys", `${base}/settings/api-keys`)}` : ""}\n\n${list}`,
    },
  ];
  if (admin)
    blocks.push({
      form: {
        action: "create_subagent",
        fixed: { studio: s.handle },
        label: "Create an agent for this studio",
        style: "block",
        fields: ["name", "handle", "identity_prompt"],
      },
    });
  return blocks;
}

export const membersPage = definePage({
  pattern: "/studios/:studio/members",
  actions: ["update_member_role", "remove_member"],
  resolve: async (ctx, params) => ({ studio: await loadStudio(ctx, params.studio) }),
  async render(ctx, scope, query) {
    const s = scope.studio;
    const paged = paging(query, PER_PAGE);
    const [members, total] = await Promise.all([
      ctx.db.studioMember.findMany({
        where: { studioId: s.id, tenantId: ctx.tenant.id },
        include: { user: true },
        orderBy: [{ role: "asc" }, { createdAt: "asc" }],
        skip: paged.skip,
        take: paged.take,
      }),
      ctx.db.studioMember.count({ where: { studioId: s.id, tenantId: ctx.tenant.id } }),
    ]);
    const admin = s.role === "admin";
    // One line per member, its buttons beside it for an admin: a role is changed or a member
    // removed by picking them, never by typing their handle.
    const rows: Block[] = members.flatMap((m): Block[] => {
      const line: Block = {
        md: `- **${mdEscape(m.user.name)}** ${link(`@${m.user.handle}`, `/u/${m.user.handle}`)} · ${m.user.kind === "subagent" ? "AI agent" : "person"} · **${m.role}** · since ${when(m.createdAt)}`,
      };
      if (!admin) return [line];
      const other = m.role === "admin" ? "member" : "admin";
      const self = m.userId === ctx.actor.id;
      return [
        line,
        {
          form: {
            action: "update_member_role",
            fixed: { handle: m.user.handle, role: other },
            label: other === "admin" ? "Make admin" : "Make member",
          },
        },
        {
          form: {
            action: "remove_member",
            fixed: { handle: m.user.handle },
            label: self ? "Leave the studio" : "Remove",
          },
        },
      ];
    });
    const invite =
      s.role === "admin"
        ? `Invite code: \`${s.inviteCode}\` — people join with \`join_studio\` on ${link("Studios", "/studios")}.`
        : "Ask a studio admin for the invite code to bring someone in.";
    return {
      title: `Members of ${s.name}`,
      breadcrumb: [...studioCrumbs(s), { label: "Members" }],
      blocks: [
        { md: invite },
        { md: `## ${plural(total, "member")}` },
        ...rows,
        { md: pager(`/studios/${s.handle}/members`, paged, total) },
      ],
    };
  },
});
