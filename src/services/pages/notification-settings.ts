// Where a person chooses how they hear of their agents (mail, digest, the app), and keeps
// outgoing webhooks that tell a chat tool or a service (services/reach/).
import { NotFoundError } from "../../lib/errors.ts";
import { ALL_AGENTS } from "../actions/agent-mention-mutes.ts";
import { EVENT_LABELS, keptBy, webhooksPath } from "../actions/outgoing-webhooks.ts";
import { askableAgents } from "../agents/core/directory.ts";
import {
  CHANNEL_LABELS,
  KIND_LABELS,
  mailConfigured,
  REACH_KINDS,
  reachPrefs,
} from "../reach/preferences.ts";
import { code, link, mdEscape } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage } from "../registry/types.ts";
import { home, studioName, when } from "./format.ts";
import { ownSettings } from "./settings.ts";

const crumbs = (handle: string, last: { label: string; path?: string }[]) => [
  home,
  { label: `@${handle}`, path: `/u/${handle}` },
  { label: "Settings", path: `/u/${handle}/settings` },
  ...last,
];

function mailLine(email: string | null): string {
  if (!mailConfigured())
    return "_This server sends no mail (its operator has not set `SMTP_URL`): whatever you choose, news reaches you in the app only._";
  if (!email) return "_Your account has no email address, so nothing can be mailed to you._";
  return `Mail goes to **${mdEscape(email)}**. An approval mail carries Approve and Reject links: each opens the action here, and nothing happens until you confirm.`;
}

export const notificationSettingsPage = definePage({
  pattern: "/u/:handle/settings/notifications",
  actions: ["set_notifications", "mute_agent_mentions", "unmute_agent_mentions"],
  resolve: (ctx, params) => ownSettings(ctx, params.handle),
  async render(ctx, scope) {
    const user = await ctx.db.user.findUniqueOrThrow({ where: { id: scope.user.id } });
    const prefs = reachPrefs(user.reachPrefs);
    const muted = await ctx.db.user.findMany({
      where: { id: { in: user.mutedAgentIds }, tenantId: ctx.tenant.id },
      select: { handle: true },
      orderBy: { handle: "asc" },
    });
    return {
      title: "Notifications",
      breadcrumb: crumbs(user.handle, [{ label: "Notifications" }]),
      blocks: [
        {
          md: [
            "How you hear of what your agents need. **In the app only**: the bell in the menu. **Email at once**: the bell, and a mail within seconds. **Daily digest**: the bell, and one mail a day listing them. **Off**: nothing, not even the bell (approvals still wait on your approvals page).",
            "",
            mailLine(user.email),
            "",
            REACH_KINDS.map((k) => `- ${KIND_LABELS[k]}: **${CHANNEL_LABELS[prefs[k]]}**`).join("\n"),
          ].join("\n"),
        },
        { form: { action: "set_notifications", fixed: {}, label: "Save", style: "block", values: prefs } },
        {
          md: `To tell a chat channel or a service, add an ${link("outgoing webhook", webhooksPath(user.handle))}.`,
        },
        ...muteBlocks(
          user.muteAgentMentions,
          muted,
          await askableAgents(ctx.db, ctx.tenant.id, ctx.actor.id),
        ),
      ],
    };
  },
});

/**
 * Agents' mentions of you, muted or not: a handle an agent quotes never notifies anyone anyway.
 * The agent to mute is picked from those that can mention you (mute_agent_mentions' own rule).
 */
function muteBlocks(
  all: boolean,
  muted: { handle: string }[],
  askable: { handle: string; name: string }[],
): Block[] {
  const mutedHandles = new Set(muted.map((agent) => agent.handle));
  const choices = [
    { value: ALL_AGENTS, label: "Every agent" },
    ...askable
      .filter((agent) => !mutedHandles.has(agent.handle))
      .map((agent) => ({ value: agent.handle, label: `@${agent.handle} (${agent.name})` })),
  ];
  const state = all
    ? "**Muted for every agent**: no agent's mention notifies you."
    : muted.length
      ? `Muted: ${muted.map((agent) => `@${agent.handle}`).join(", ")}.`
      : "Every agent's mention of you notifies you.";
  return [
    {
      md: [
        "## Mentions by agents",
        "",
        `An agent reaches you with a mention only when it answers something you asked it (a handle it quotes or greets notifies nobody). ${state}`,
      ].join("\n"),
    },
    // While every agent is muted, unmuting one would change nothing: only "every agent" is offered.
    ...(all ? [] : muted.map((agent) => unmuteForm(agent.handle, `Unmute @${agent.handle}`))),
    ...(all || muted.length > 1 ? [unmuteForm(ALL_AGENTS, "Unmute every agent")] : []),
    ...(all
      ? []
      : [
          {
            form: {
              action: "mute_agent_mentions",
              fixed: {},
              label: "Mute",
              style: "block" as const,
              values: { agent: choices[1]?.value ?? ALL_AGENTS },
              choices: { agent: choices },
            },
          },
        ]),
  ];
}

function unmuteForm(agent: string, label: string): Block {
  return { form: { action: "unmute_agent_mentions", fixed: { agent }, label } };
}

async function endpointsOf(ctx: Ctx) {
  return ctx.db.outboundEndpoint.findMany({
    where: { tenantId: ctx.tenant.id, ...keptBy(ctx.actor.id) },
    include: { studio: { select: { name: true } }, owner: { select: { handle: true } } },
    orderBy: { createdAt: "asc" },
  });
}

const stateOf = (endpoint: {
  enabled: boolean;
  disabledReason: string | null;
  pausedAt: Date | null;
  pausedReason: string | null;
}) =>
  endpoint.pausedAt
    ? `**paused** (${mdEscape(endpoint.pausedReason ?? "its creator left")}: an admin confirms it; deliveries wait)`
    : endpoint.enabled
      ? "on"
      : `**off**${endpoint.disabledReason ? ` (${mdEscape(endpoint.disabledReason)})` : ""}`;

export const outgoingWebhooksPage = definePage({
  pattern: "/u/:handle/settings/webhooks",
  actions: ["create_outgoing_webhook"],
  resolve: (ctx, params) => ownSettings(ctx, params.handle),
  async render(ctx, scope) {
    const user = scope.user;
    const [endpoints, adminOf] = await Promise.all([
      endpointsOf(ctx),
      ctx.db.studio.findMany({
        where: { tenantId: ctx.tenant.id, members: { some: { userId: user.id, role: "admin" } } },
        orderBy: { name: "asc" },
      }),
    ]);
    const rows = endpoints.map(
      (endpoint) =>
        `| ${link(endpoint.name, `${webhooksPath(user.handle)}/${endpoint.id}`)} | ${endpoint.studio ? mdEscape(endpoint.studio.name) : "you"} | @${endpoint.owner.handle} | ${endpoint.format} | ${endpoint.events.join(", ")} | ${stateOf(endpoint)} |`,
    );
    return {
      title: "Outgoing webhooks",
      breadcrumb: crumbs(user.handle, [{ label: "Outgoing webhooks" }]),
      blocks: [
        {
          md: "Cadre POSTs your agents' events to these URLs: an action waiting for approval, a question, a run that finished or failed, a cost alert. Each delivery is signed (`X-Cadre-Signature`, as inbound webhooks are) and retried with backoff; after repeated failures the webhook turns itself off and tells you. Pick **Slack-compatible** to paste a Slack (or Mattermost, Rocket.Chat) incoming-webhook URL. Deliveries name agents, actions and pages, never what an action would write: the review link opens it here.",
        },
        {
          md: rows.length
            ? [
                "| name | for | set up by | format | events | state |",
                "|---|---|---|---|---|---|",
                ...rows,
              ].join("\n")
            : "_No outgoing webhooks yet._",
        },
        { md: "## Add one" },
        {
          form: {
            action: "create_outgoing_webhook",
            fixed: {},
            label: "Add webhook",
            style: "block",
            values: {
              studio: "",
              format: "json",
              approval_requested: true,
              question_asked: true,
              run_failed: true,
            },
            choices: {
              studio: [
                { value: "", label: "Your agents" },
                ...adminOf.map((studio) => ({
                  value: studio.handle,
                  label: `${studioName(studio)}: its agents, kept by its admins`,
                })),
              ],
            },
          },
        },
      ],
    };
  },
});

export const outgoingWebhookPage = definePage({
  pattern: "/u/:handle/settings/webhooks/:id",
  actions: [
    "confirm_outgoing_webhook",
    "test_outgoing_webhook",
    "enable_outgoing_webhook",
    "disable_outgoing_webhook",
    "delete_outgoing_webhook",
  ],
  async resolve(ctx, params) {
    const scope = await ownSettings(ctx, params.handle);
    const endpoint = await ctx.db.outboundEndpoint.findFirst({
      where: { id: params.id, tenantId: ctx.tenant.id, ...keptBy(ctx.actor.id) },
    });
    if (!endpoint) throw new NotFoundError(`No outgoing webhook #${params.id}`);
    return { ...scope, endpoint };
  },
  async render(ctx, scope) {
    const user = scope.user;
    const endpoint = await ctx.db.outboundEndpoint.findUniqueOrThrow({
      where: { id: scope.endpoint.id },
      include: { studio: { select: { name: true } }, owner: { select: { handle: true } } },
    });
    const deliveries = await ctx.db.outboundDelivery.findMany({
      where: { endpointId: endpoint.id },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: 50,
    });
    const log = deliveries.map(
      (delivery) =>
        `| ${when(delivery.createdAt)} | \`${delivery.eventType}\` | **${delivery.status}** | ${delivery.attempts} | ${delivery.lastStatus ?? "—"} | ${delivery.lastError ? mdEscape(delivery.lastError.slice(0, 160)) : ""} |`,
    );
    const blocks: Block[] = [
      {
        md: [
          `${code(`POST ${endpoint.url}`)}`,
          "",
          `For **${endpoint.studio ? mdEscape(endpoint.studio.name) : "your agents"}** · ${endpoint.format === "slack" ? "Slack-compatible" : "Cadre's JSON"} · set up by @${endpoint.owner.handle} · state: ${stateOf(endpoint)}${endpoint.failures ? ` · ${endpoint.failures} failed in a row` : ""}`,
          "",
          `Events: ${endpoint.events.map((x) => `${EVENT_LABELS[x as keyof typeof EVENT_LABELS] ?? x} (\`${x}\`)`).join("; ")}`,
        ].join("\n"),
      },
      ...(endpoint.pausedAt
        ? [
            {
              form: {
                action: "confirm_outgoing_webhook",
                fixed: { id: endpoint.id },
                label: `Keep sending to this URL, as mine`,
              },
            },
          ]
        : []),
      { form: { action: "test_outgoing_webhook", fixed: { id: endpoint.id }, label: "Send a test event" } },
      endpoint.enabled
        ? { form: { action: "disable_outgoing_webhook", fixed: { id: endpoint.id }, label: "Turn off" } }
        : { form: { action: "enable_outgoing_webhook", fixed: { id: endpoint.id }, label: "Turn on again" } },
      { form: { action: "delete_outgoing_webhook", fixed: { id: endpoint.id }, label: "Delete" } },
      {
        md: `## Deliveries\n\n${
          log.length
            ? [
                "| when | event | status | attempts | last answer | last error |",
                "|---|---|---|---|---|---|",
                ...log,
              ].join("\n")
            : "_Nothing sent yet._"
        }`,
      },
    ];
    return {
      title: endpoint.name,
      breadcrumb: crumbs(user.handle, [
        { label: "Outgoing webhooks", path: webhooksPath(user.handle) },
        { label: endpoint.name },
      ]),
      blocks,
    };
  },
});
