import { plural } from "../../lib/plural.ts";
import { loadStudio, studiosSeenByViewers } from "../access.ts";
import { unreadOf } from "../notifications.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage, defineReadPage, type StudioScope } from "../registry/types.ts";
import { AGENTS_PATH } from "./agents-directory.ts";
import { home, type Paging, PER_PAGE, pager, paging, studioCrumbs, when, who } from "./format.ts";
import { loadWaiting, waitingBlocks, waitingStudioHandles } from "./home-waiting.ts";
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

/** "you are an admin", "you are a member": a reader's role in a sentence. */
const youAre = (role: string) => `you are ${role === "admin" ? "an admin" : "a member"}`;

export const homePage = definePage({
  pattern: "/",
  actions: [],
  resolve: async () => ({}),
  async render(ctx) {
    const [{ memberships, total }, unread, waiting] = await Promise.all([
      myStudios(ctx, paging({})),
      ctx.db.notification.count({
        where: unreadOf(ctx.actor.id, ctx.tenant.id),
      }),
      loadWaiting(ctx),
    ]);
    // The studios it names besides the reader's own list: those its waiting items are in.
    const named = await ctx.db.studio.findMany({
      where: { tenantId: ctx.tenant.id, handle: { in: waitingStudioHandles(waiting) } },
      select: { id: true },
    });
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
        ...waitingBlocks(waiting),
        {
          md: `## Your studios\n\n${studios}${total > memberships.length ? `\n\n${link(`All ${total} studios`, "/studios")}` : ""}`,
        },
        {
          md: `## Elsewhere\n\n- ${link("Agents you can ask", AGENTS_PATH)}\n- ${link(`Notifications (${unread} unread)`, "/notifications")}\n- ${link("Search", "/search")}\n- ${link("Who am I", "/whoami")}\n- ${link("Your settings and API tokens", `/u/${ctx.actor.handle}/settings`)}`,
        },
      ],
      sources: [...new Set([...memberships.map((m) => m.studioId), ...named.map((studio) => studio.id)])].map(
        (studio) => ({ studio }),
      ),
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
            (membership) =>
              `- ${link(membership.studio.name, `/studios/${membership.studio.handle}`)} (\`${membership.studio.handle}\`) — ${youAre(membership.role)}`,
          )
          .join("\n")
      : "_You are not a member of any studio yet. Create one, or join with an invite code._";
    return {
      title: "Studios",
      breadcrumb: [home, { label: "Studios" }],
      blocks: [{ md: list }, { md: pager("/studios", paged, total) }],
      // It names studios, and a studio's name can be what is private: each counts.
      sources: memberships.map((m) => ({ studio: m.studioId })),
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
    const { studio, overview } = await studioOverview(ctx, params.studio);
    const watch = await watchBlocks(ctx, { studio });
    const agents = studioAgentBlocks(ctx, studio, overview.agents);
    const { pinned, notes, decisions, commitments, counts } = overview;
    const base = `/studios/${studio.handle}`;
    const more = (total: number, shown: number, path: string, what: string) =>
      total > shown ? `\n\n${link(`All ${total} ${what}`, path)}` : "";
    const noteLine = (note: NoteLine) =>
      `- ${link(note.title || "Untitled note", `${base}/notes/${note.id}`)} — ${who(note.author)}, ${when(note.createdAt)}${note.pinned ? " · pinned" : ""}`;
    const view = {
      title: studio.name,
      breadcrumb: [home, { label: "Studios", path: "/studios" }, { label: studio.name }],
      blocks: [
        {
          md: `${studio.description ? `${quote(studio.description)}\n\n` : ""}Handle \`${studio.handle}\` · ${youAre(studio.role)} · ${link(`${counts.members} members`, `${base}/members`)}`,
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
                    (decision) =>
                      `- ${link(decision.question, `${base}/decisions/${decision.id}`)} — ${who(decision.author)}, ${when(decision.createdAt)}`,
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
                    (commitment) =>
                      `- ${link(commitment.title, `${base}/commitments/${commitment.id}`)} — ${commitment.joined}/${commitment.criticalMass} joined${commitment.activated ? " · **active**" : ""}`,
                  )
                  .join("\n")
              : "_No commitments yet._"
          }${more(counts.commitments, commitments.length, `${base}/commitments`, "commitments")}`,
        },
        ...agents,
      ],
    };
    return { scope: { studio }, view };
  },
});

/** The agents the studio owns; for its admins, a form to create one and links to its keys and usage. */
function studioAgentBlocks(ctx: Ctx, studio: StudioScope, agents: StudioOverview["agents"]): Block[] {
  const admin = studio.role === "admin" && ctx.actor.kind === "person";
  const list = agents.length
    ? agents
        .map(
          (a) => `- ${link(a.name, admin ? `/subagents/${a.handle}` : `/u/${a.handle}`)} (\`@${a.handle}\`)`,
        )
        .join("\n")
    : "_None yet._";
  const base = `/studios/${studio.handle}`;
  const blocks: Block[] = [
    {
      md: `## Its agents\n\nAgents the studio owns: every admin manages them, and they act only here.${admin ? ` ${link("Usage", `${base}/usage`)} · ${link("Model API keys", `${base}/settings/api-keys`)} · ${link("Connected tools", `${base}/settings/tools`)}` : ""}\n\n${list}`,
    },
  ];
  if (admin)
    blocks.push({
      form: {
        action: "create_subagent",
        fixed: { studio: studio.handle },
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
    const studio = scope.studio;
    const paged = paging(query, PER_PAGE);
    const [members, total] = await Promise.all([
      ctx.db.studioMember.findMany({
        where: { studioId: studio.id, tenantId: ctx.tenant.id },
        include: { user: true },
        orderBy: [{ role: "asc" }, { createdAt: "asc" }],
        skip: paged.skip,
        take: paged.take,
      }),
      ctx.db.studioMember.count({ where: { studioId: studio.id, tenantId: ctx.tenant.id } }),
    ]);
    const admin = studio.role === "admin";
    // One line per member, its buttons beside it for an admin: a role is changed or a member
    // removed by picking them, never by typing their handle.
    const rows: Block[] = members.flatMap((membership): Block[] => {
      const line: Block = {
        md: `- **${mdEscape(membership.user.name)}** ${link(`@${membership.user.handle}`, `/u/${membership.user.handle}`)} · ${membership.user.kind === "subagent" ? "AI agent" : "person"} · **${membership.role}** · since ${when(membership.createdAt)}`,
      };
      if (!admin) return [line];
      const other = membership.role === "admin" ? "member" : "admin";
      const self = membership.userId === ctx.actor.id;
      return [
        line,
        {
          form: {
            action: "update_member_role",
            fixed: { handle: membership.user.handle, role: other },
            label: other === "admin" ? "Make admin" : "Make member",
          },
        },
        {
          form: {
            action: "remove_member",
            fixed: { handle: membership.user.handle },
            label: self ? "Leave the studio" : "Remove",
          },
        },
      ];
    });
    const invite =
      studio.role === "admin"
        ? `Invite code: \`${studio.inviteCode}\` — people join with \`join_studio\` on ${link("Studios", "/studios")}.`
        : "Ask a studio admin for the invite code to bring someone in.";
    return {
      title: `Members of ${studio.name}`,
      breadcrumb: [...studioCrumbs(studio), { label: "Members" }],
      blocks: [
        { md: invite },
        { md: `## ${plural(total, "member")}` },
        ...rows,
        { md: pager(`/studios/${studio.handle}/members`, paged, total) },
      ],
    };
  },
});
