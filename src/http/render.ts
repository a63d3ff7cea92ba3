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
}

export async function sendPage(req: FastifyRequest, reply: FastifyReply, r: PageReply) {
  reply.code(r.status).header("Vary", "Accept");
  if (r.location) reply.header("Location", r.location);
  if (r.format === "markdown") {
    const notice = [r.notice, r.secret ? `${r.secretLabel ?? "Your new token"}: \`${r.secret}\`` : undefined]
      .filter(Boolean)
      .join("\n\n");
    const help = r.secret ? r.secretHelp : undefined;
    return reply
      .type("text/markdown; charset=utf-8")
      .send(renderPageMarkdown(r.view, r.actions, r.path, notice || undefined, help));
  }
  const { content, actions } = renderPageHtml(r.view, r.actions, {
    path: r.path,
    csrf: req.csrfToken,
    state: r.state,
    scope: r.scope,
  });
  return sendLayout(req, reply, {
    title: r.view.title,
    breadcrumb: r.view.breadcrumb,
    content,
    actions,
    notice: r.notice,
    warning: r.warning,
    secret: r.secret,
    secretLabel: r.secretLabel,
    secretHelpHtml: r.secret && r.secretHelp ? markdownToHtml(r.secretHelp) : undefined,
    live: r.view.live && { path: r.path, since: r.view.live.since },
    alert: r.alert,
    confirm: r.confirm,
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

export async function sendLayout(req: FastifyRequest, reply: FastifyReply, d: LayoutData) {
  const html = await req.server.view("layout.eta", {
    ...d,
    breadcrumbHtml: d.breadcrumb.length ? markdownToHtml(breadcrumbLine(d.breadcrumb)) : "",
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
