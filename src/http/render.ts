// Turns registry results into a reply in the negotiated format. Markdown answers
// carry `Vary: Accept` because the same URL also serves HTML.

import type { FastifyReply, FastifyRequest } from "fastify";
import { managedBy } from "../services/agents/core/ownership.ts";
import { tenantSettings } from "../services/agents/core/settings.ts";
import { awaitingReview } from "../services/agents/policy/approvals.ts";
import { unreadOf } from "../services/notifications.ts";
import { escapeHtml, type FormState, markdownToHtml } from "../services/registry/html.ts";
import { breadcrumbLine, renderPageMarkdown } from "../services/registry/markdown.ts";
import { renderPageHtml } from "../services/registry/page-html.ts";
import type { ActionDef, Crumb, PageView, Scope } from "../services/registry/types.ts";
import type { Format } from "./format.ts";

export interface PageReply {
  status: number;
  format: Format;
  path: string;
  view: PageView;
  actions: ActionDef[];
  notice?: string;
  /** The notice reports something that did not work (a key test that failed). */
  warning?: boolean;
  secret?: string;
  secretLabel?: string;
  secretHelp?: string;
  state?: FormState;
  location?: string;
  /** An error that is not about one field (403, 409), shown above the page. */
  alert?: string;
  /** What the page resolved: edit forms start from its current values. */
  scope?: Scope;
  /** A destructive action's confirmation step (trusted markup), shown above the page. */
  confirm?: string;
  /** The actions whose forms ask the session to re-confirm first (registry/step-up.ts). */
  reconfirm?: ReadonlySet<string>;
}

export async function sendPage(req: FastifyRequest, reply: FastifyReply, pageReply: PageReply) {
  reply.code(pageReply.status).header("Vary", "Accept");
  if (pageReply.location) reply.header("Location", pageReply.location);
  if (pageReply.format === "markdown") {
    const notice = [
      pageReply.notice,
      pageReply.secret ? `${pageReply.secretLabel ?? "Your new token"}: \`${pageReply.secret}\`` : undefined,
    ]
      .filter(Boolean)
      .join("\n\n");
    const help = pageReply.secret ? pageReply.secretHelp : undefined;
    return reply
      .type("text/markdown; charset=utf-8")
      .send(renderPageMarkdown(pageReply.view, pageReply.actions, pageReply.path, notice || undefined, help));
  }
  const { content, actions } = renderPageHtml(pageReply.view, pageReply.actions, {
    path: pageReply.path,
    csrf: req.csrfToken,
    state: pageReply.state,
    scope: pageReply.scope,
    reconfirm: pageReply.reconfirm,
  });
  return sendLayout(req, reply, {
    title: pageReply.view.title,
    breadcrumb: pageReply.view.breadcrumb,
    content,
    actions,
    notice: pageReply.notice,
    warning: pageReply.warning,
    secret: pageReply.secret,
    secretLabel: pageReply.secretLabel,
    secretHelpHtml:
      pageReply.secret && pageReply.secretHelp ? markdownToHtml(pageReply.secretHelp) : undefined,
    live: pageReply.view.live && { path: pageReply.path, since: pageReply.view.live.since },
    alert: pageReply.alert,
    confirm: pageReply.confirm,
  });
}

export interface LayoutData {
  title: string;
  breadcrumb: Crumb[];
  content: string;
  actions?: string;
  notice?: string;
  warning?: boolean;
  secret?: string;
  /** What the secret is ("Your new token"). */
  secretLabel?: string;
  /** Trusted, rendered from the action's own markdown. */
  secretHelpHtml?: string;
  error?: boolean;
  /** The page updates live: its path and where its view stands in its feed (public/live.js). */
  live?: { path: string; since: string };
  alert?: string;
  /** Trusted markup: the confirmation step of a destructive action. */
  confirm?: string;
}

export async function sendLayout(req: FastifyRequest, reply: FastifyReply, layoutData: LayoutData) {
  const html = await req.server.view("layout.eta", {
    ...layoutData,
    breadcrumbHtml: layoutData.breadcrumb.length ? markdownToHtml(breadcrumbLine(layoutData.breadcrumb)) : "",
    tenant: req.tenant ?? null,
    actor: req.actor ?? null,
    csrf: req.csrfToken,
    ...(await counts(req)),
    // The workspace's kill switch is on: its admins see it on every page until they switch agents back on.
    agentsOff: Boolean(req.actor?.tenantAdmin && req.tenant && !tenantSettings(req.tenant).agents_enabled),
    escape: escapeHtml,
  });
  return reply.type("text/html; charset=utf-8").send(html);
}

/** The menu's badges: unread notifications, and (for a person) agents' actions waiting for their review. */
async function counts(req: FastifyRequest): Promise<{ unread: number; pendingApprovals: number }> {
  const actor = req.actor;
  const tenantId = req.tenant?.id;
  if (!actor || !tenantId) return { unread: 0, pendingApprovals: 0 };
  const db = req.server.prisma;
  const [unread, pendingApprovals] = await Promise.all([
    db.notification.count({ where: unreadOf(actor.id, tenantId) }),
    actor.kind === "person"
      ? db.agentPendingAction.count({
          where: { tenantId, ...awaitingReview(), agent: managedBy(actor.id) },
        })
      : 0,
  ]);
  return { unread, pendingApprovals };
}
