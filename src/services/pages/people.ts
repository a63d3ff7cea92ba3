import type { User } from "../../generated/prisma/client.ts";
import { plural } from "../../lib/plural.ts";
import { loadUser, studiosSeenByViewers } from "../access.ts";
import { askableAgents } from "../agents/core/directory.ts";
import { agentConfig } from "../agents/core/settings.ts";
import { readWhoami, type Whoami, whoamiSources } from "../agents/core/whoami-read.ts";
import { ALWAYS_ALLOWED, ALWAYS_BLOCKED } from "../agents/policy/capabilities.ts";
import { toMicros } from "../money/ledger.ts";
import { usd } from "../money/pricing.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage } from "../registry/types.ts";
import { search } from "../search.ts";
import { agentSources, askBlocks } from "./agents-directory.ts";
import { excerpt, home, pager, paging, when, who } from "./format.ts";

/** What a subagent needs to know about itself at the start of every run. */
function agentBlocks(
  user: Pick<User, "agentConfig" | "scratchpad">,
  spentMicros: bigint,
  watching: Whoami["watching"],
  unnamed: string,
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
      md: `## What you watch\n\n${watching.length ? `Events on these pages start your runs (\`subscribe\` / \`unsubscribe\` on a page change them):\n\n${watching.map((w) => `- ${w.path} — ${w.events.join(", ")}${w.enabled ? "" : " (paused)"}`).join("\n")}${unnamed ? `\n\n${unnamed}` : ""}` : unnamed || "_Nothing: `subscribe` on a studio or a page to be woken by what happens there._"}`,
    },
    {
      md: `## Your scratchpad\n\nNotes you left yourself in earlier runs (update them with \`update_scratchpad\`):\n\n${user.scratchpad ? quote(user.scratchpad) : "_Empty._"}`,
    },
  ];
}

/** "**What it does:** …", in its managers' words (update_subagent). */
function whatItDoes(user: Pick<User, "agentConfig">): string {
  const description = agentConfig({ agentConfig: user.agentConfig as never }).description;
  return `**What it does:** ${description ? mdEscape(description) : "_Its managers have not said yet._"}`;
}

export const whoamiPage = definePage({
  pattern: "/whoami",
  actions: ["update_scratchpad"],
  resolve: async () => ({}),
  async render(ctx) {
    const whoami = await readWhoami(ctx);
    const { user, studios: memberships, watching, unread, unreadCount, spentMicros: spent } = whoami;
    const unnamed = unnamedLine(whoami.unnamedStudios, "studio");
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
      ? `${memberships
          .map((m) => `- ${link(m.name, `/studios/${m.handle}`)} (\`${m.handle}\`) — ${m.role}`)
          .join("\n")}${unnamed ? `\n\n${unnamed}` : ""}`
      : unnamed || "_None yet._";
    const notes = unread.length
      ? unread
          .map(
            (notification) =>
              `- ${who(notification.actor)} ${verb(notification.kind)} ${link(excerpt(notification.excerpt, 80) || notification.path, notification.path)} · ${when(notification.createdAt)}`,
          )
          .join("\n")
      : "_Nothing unread._";
    return {
      title: "Who am I",
      breadcrumb: [home, { label: "Who am I" }],
      blocks: [
        { md: identity },
        ...(user.bio ? [{ md: quote(user.bio) }] : []),
        // An agent reads what its managers say it does (update_subagent), as its askers do.
        ...(user.kind === "subagent" ? [{ md: whatItDoes(user) }] : []),
        ...(user.kind === "subagent"
          ? agentBlocks(user, spent, watching, unnamedLine(whoami.unnamedWatching, "subscription"))
          : []),
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

/**
 * The places /whoami does not name to this run: naming them would count them among what it
 * read (their names can be what is private), and hold its ordinary writes.
 */
function unnamedLine(count: number, what: "studio" | "subscription"): string {
  if (!count) return "";
  const where = what === "studio" ? "`/studios` lists them" : "each studio's page shows them";
  return `_And ${plural(count, `other ${what}`)}, not named here: what you have read so far does not cover them, and reading their names counts them in it (${where})._`;
}

export function verb(kind: string): string {
  if (kind === "agent") return "needs you:";
  return kind === "mention" ? "mentioned you in" : kind === "reply" ? "replied to you on" : "commented on";
}

export const searchPage = definePage({
  pattern: "/search",
  actions: ["search"],
  resolve: async () => ({}),
  async render(ctx, _scope, query) {
    const terms = (query.q ?? "").trim().slice(0, 200);
    if (!terms)
      return {
        title: "Search",
        breadcrumb: [home, { label: "Search" }],
        blocks: [{ md: "Search notes, decisions, commitments and comments in your studios." }],
      };
    const paged = paging(query);
    const { hits, total } = await search(ctx, terms, paged.skip, paged.take);
    const lines = hits.map(
      (hit) =>
        `- **${hit.kind}** ${link(hit.title, hit.path)} in \`${hit.studio}\` · ${when(hit.createdAt)}\n  ${mdEscape(hit.snippet)}`,
    );
    return {
      title: `Search: ${terms}`,
      breadcrumb: [home, { label: "Search", path: "/search" }, { label: terms }],
      blocks: [
        {
          md: total
            ? `${plural(total, "result")} for “${mdEscape(terms)}”.`
            : `Nothing matches “${mdEscape(terms)}”.`,
        },
        { md: lines.join("\n") },
        { md: pager("/search", paged, total, { q: terms }) },
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
    const user = scope.user;
    const [parent, studio] = await Promise.all([
      user.parentId ? ctx.db.user.findUnique({ where: { id: user.parentId } }) : null,
      user.ownerStudioId ? ctx.db.studio.findUnique({ where: { id: user.ownerStudioId } }) : null,
    ]);
    const seen = await studiosSeenByViewers(ctx);
    const [asked] =
      user.kind === "subagent"
        ? await askableAgents(ctx.db, ctx.tenant.id, ctx.actor.id, { handles: [user.handle] })
        : [];
    const shared = await ctx.db.studio.findMany({
      where: {
        tenantId: ctx.tenant.id,
        AND: [{ members: { some: { userId: user.id } } }, { members: { some: { userId: ctx.actor.id } } }],
        ...(seen && { id: { in: seen } }),
      },
      orderBy: { name: "asc" },
    });
    return {
      title: user.name,
      breadcrumb: [home, { label: `@${user.handle}` }],
      blocks: [
        {
          md: `${who(user)} · ${user.kind}${parent ? ` owned by ${who(parent)}` : ""}${studio ? ` owned by the studio ${link(studio.name, `/studios/${studio.handle}`)}` : ""} · joined ${when(user.createdAt)}`,
        },
        ...(user.bio ? [{ md: quote(user.bio) }] : []),
        // An agent's profile says what it does and how this reader asks it, as /agents does.
        ...(asked ? askBlocks(asked) : []),
        ...(user.kind === "subagent" && !asked
          ? [{ md: `${whatItDoes(user)}\n\n**To ask it:** you cannot: it works in no studio you are in.` }]
          : []),
        {
          md: `## Studios you share\n\n${shared.length ? shared.map((s) => `- ${link(s.name, `/studios/${s.handle}`)}`).join("\n") : "_None._"}`,
        },
        ...(user.id === ctx.actor.id
          ? [{ md: link("Your settings and API tokens", `/u/${user.handle}/settings`) }]
          : []),
      ],
      // The studios it names count: a studio's name can be what is private.
      sources: [...shared.map((s) => ({ studio: s.id })), ...(asked ? agentSources([asked]) : [])],
    };
  },
});
