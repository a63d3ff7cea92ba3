import type { User } from "../../generated/prisma/client.ts";
import { plural } from "../../lib/plural.ts";
import { loadUser, studiosSeenByViewers } from "../access.ts";
import { agentConfig } from "../agents/core/settings.ts";
import { readWhoami, type Whoami, whoamiSources } from "../agents/core/whoami-read.ts";
import { ALWAYS_ALLOWED, ALWAYS_BLOCKED } from "../agents/policy/capabilities.ts";
import { toMicros } from "../money/ledger.ts";
import { usd } from "../money/pricing.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage } from "../registry/types.ts";
import { search } from "../search.ts";
import { excerpt, home, pager, paging, when, who } from "./format.ts";

/** What a subagent needs to know about itself at the start of every run. */
function agentBlocks(
  user: Pick<User, "agentConfig" | "scratchpad">,
  spentMicros: bigint,
  watching: Whoami["watching"],
): Block[] {
  const config = agentConfig({ agentConfig: user.agentConfig as never });
  return [
    {
      md: `## Your identity\n\n${config.identity_prompt ? quote(config.identity_prompt) : "_Your owner gave you no identity prompt: be a helpful, careful assistant._"}`,
    },
    {
      md: [
        "## Your capabilities",
        "",
        `Always allowed: ${ALWAYS_ALLOWED.map((a) => `\`${a}\``).join(", ")}, and reading any page you can see.`,
        `Granted by your owner: ${config.capabilities.map((a) => `\`${a}\``).join(", ") || "none"}.`,
        `Never available to agents: ${ALWAYS_BLOCKED.map((a) => `\`${a}\``).join(", ")}.`,
        config.requires_approval.length || config.rules.length
          ? `Some actions wait for your owner's approval (${config.requires_approval.map((a) => `\`${a}\``).join(", ") || "by rule"}): you will be told "queued for approval as #id"${config.approval_mode === "wait" ? ", and the run pauses until it is reviewed" : "; carry on meanwhile"}. Rules may also deny an action by name: then try something else.`
          : "Nothing you may do needs approval.",
        "Pages list only the actions you may use.",
      ].join("\n"),
    },
    {
      md: `## Your budget\n\nThis month your model calls cost ${usd(spentMicros)} of your ${usd(toMicros(config.cost_limit_usd))} limit. At the limit your run stops and you are paused until your owner raises it: use steps well, and finish once the task is done.`,
    },
    {
      md: `## What you watch\n\n${watching.length ? `Events on these pages start your runs (\`subscribe\` / \`unsubscribe\` on a page change them):\n\n${watching.map((w) => `- ${w.path} — ${w.events.join(", ")}${w.enabled ? "" : " (paused)"}`).join("\n")}` : "_Nothing: `subscribe` on a studio or a page to be woken by what happens there._"}`,
    },
    {
      md: `## Your scratchpad\n\nNotes you left yourself in earlier runs (update them with \`update_scratchpad\`):\n\n${user.scratchpad ? quote(user.scratchpad) : "_Empty._"}`,
    },
  ];
}

export const whoamiPage = definePage({
  pattern: "/whoami",
  actions: ["update_scratchpad"],
  resolve: async () => ({}),
  async render(ctx) {
    const whoami = await readWhoami(ctx);
    const { user, studios: memberships, watching, unread, unreadCount, spentMicros: spent } = whoami;
    const identity = [
      `You are ${who(user)}, a ${user.kind} in the ${mdEscape(ctx.tenant.name)} workspace (\`${ctx.tenant.subdomain}\`).`,
      user.parent ? `Your owner is ${who(user.parent)}.` : null,
      user.ownerStudio
        ? `You belong to the studio ${link(user.ownerStudio.name, `/studios/${user.ownerStudio.handle}`)}: its admins manage you, and you act only there.`
        : null,
    ]
      .filter(Boolean)
      .join(" ");
    const studios = memberships.length
      ? memberships
          .map((m) => `- ${link(m.name, `/studios/${m.handle}`)} (\`${m.handle}\`) — ${m.role}`)
          .join("\n")
      : "_None yet._";
    const notes = unread.length
      ? unread
          .map(
            (n) =>
              `- ${who(n.actor)} ${verb(n.kind)} ${link(excerpt(n.excerpt, 80) || n.path, n.path)} · ${when(n.createdAt)}`,
          )
          .join("\n")
      : "_Nothing unread._";
    return {
      title: "Who am I",
      breadcrumb: [home, { label: "Who am I" }],
      blocks: [
        { md: identity },
        ...(user.bio ? [{ md: quote(user.bio) }] : []),
        ...(user.kind === "subagent" ? agentBlocks(user, spent, watching) : []),
        { md: `## Your studios\n\n${studios}` },
        {
          md: `## Unread notifications (${unreadCount})\n\n${notes}${unreadCount > unread.length ? `\n\n${link("All notifications", "/notifications")}` : ""}`,
        },
        {
          md: "## How to act\n\nEvery page lists its actions under **Actions**. `GET <page>/actions/<name>` describes one; `POST <page>/actions/<name>` with a JSON body runs it. Search with `/search?q=<words>`.",
        },
      ],
      sources: whoamiSources(whoami),
    };
  },
});

export function verb(kind: string): string {
  if (kind === "agent") return "needs you:";
  return kind === "mention" ? "mentioned you in" : kind === "reply" ? "replied to you on" : "commented on";
}

export const searchPage = definePage({
  pattern: "/search",
  actions: ["search"],
  resolve: async () => ({}),
  async render(ctx, _scope, query) {
    const q = (query.q ?? "").trim().slice(0, 200);
    if (!q)
      return {
        title: "Search",
        breadcrumb: [home, { label: "Search" }],
        blocks: [{ md: "Search notes, decisions, commitments and comments in your studios." }],
      };
    const paged = paging(query);
    const { hits, total } = await search(ctx, q, paged.skip, paged.take);
    const lines = hits.map(
      (h) =>
        `- **${h.kind}** ${link(h.title, h.path)} in \`${h.studio}\` · ${when(h.createdAt)}\n  ${mdEscape(h.snippet)}`,
    );
    return {
      title: `Search: ${q}`,
      breadcrumb: [home, { label: "Search", path: "/search" }, { label: q }],
      blocks: [
        {
          md: total
            ? `${plural(total, "result")} for “${mdEscape(q)}”.`
            : `Nothing matches “${mdEscape(q)}”.`,
        },
        { md: lines.join("\n") },
        { md: pager("/search", paged, total, { q }) },
      ],
      // Each result quotes its studio.
      sources: hits.map((h) => ({ studio: h.studioId })),
    };
  },
});

async function profileScope(ctx: Ctx, handle: string) {
  return { user: await loadUser(ctx, handle) };
}

export const profilePage = definePage({
  pattern: "/u/:handle",
  actions: [],
  resolve: (ctx, params) => profileScope(ctx, params.handle),
  async render(ctx, scope) {
    const u = scope.user;
    const [parent, studio] = await Promise.all([
      u.parentId ? ctx.db.user.findUnique({ where: { id: u.parentId } }) : null,
      u.ownerStudioId ? ctx.db.studio.findUnique({ where: { id: u.ownerStudioId } }) : null,
    ]);
    const seen = await studiosSeenByViewers(ctx);
    const shared = await ctx.db.studio.findMany({
      where: {
        tenantId: ctx.tenant.id,
        AND: [{ members: { some: { userId: u.id } } }, { members: { some: { userId: ctx.actor.id } } }],
        ...(seen && { id: { in: seen } }),
      },
      orderBy: { name: "asc" },
    });
    return {
      title: u.name,
      breadcrumb: [home, { label: `@${u.handle}` }],
      blocks: [
        {
          md: `${who(u)} · ${u.kind}${parent ? ` owned by ${who(parent)}` : ""}${studio ? ` owned by the studio ${link(studio.name, `/studios/${studio.handle}`)}` : ""} · joined ${when(u.createdAt)}`,
        },
        ...(u.bio ? [{ md: quote(u.bio) }] : []),
        {
          md: `## Studios you share\n\n${shared.length ? shared.map((s) => `- ${link(s.name, `/studios/${s.handle}`)}`).join("\n") : "_None._"}`,
        },
        ...(u.id === ctx.actor.id
          ? [{ md: link("Your settings and API tokens", `/u/${u.handle}/settings`) }]
          : []),
      ],
    };
  },
});
