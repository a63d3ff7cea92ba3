// A request to a registry page as the registry sees it (its context), and the page shown back
// in the request's format: what the GET and POST routes (pages.ts, page-actions.ts), MCP and
// the CSV export share.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Format } from "../http/format.ts";
import { parseUrl } from "../http/page-target.ts";
import { type PageReply, sendPage } from "../http/render.ts";
import { UnauthorizedError } from "../lib/errors.ts";
import { agentTokenFlow } from "../services/agents/policy/labels.ts";
import { registry } from "../services/catalog/catalog.ts";
import type { Ctx } from "../services/registry/types.ts";

/** The request as a page/action context; also used by the CSV export. */
export function ctxOf(req: FastifyRequest): Ctx {
  if (!req.actor || !req.tenant) throw new UnauthorizedError();
  const { tokenId } = req;
  const db = req.server.prisma;
  return {
    db,
    tenant: req.tenant,
    actor: req.actor,
    origin: `${req.protocol}://${req.headers.host}`,
    // An agent acting with a token (the markdown API, MCP) carries a label like a run: the
    // agent's, one for all its tokens and sessions (agents/policy/labels.ts agentTokenFlow).
    ...(tokenId &&
      req.actor.kind === "subagent" && {
        flow: agentTokenFlow(
          db,
          { id: req.actor.id, agentLabel: req.agentLabel },
          { id: tokenId, label: req.tokenLabel },
        ),
      }),
    auth:
      req.authVia === "token"
        ? { via: "token", scope: req.tokenScope ?? "read" }
        : {
            via: "session",
            ...(req.sessionId && { sessionId: req.sessionId }),
            ...(req.confirmation && { confirmation: req.confirmation }),
          },
  };
}

/** What a page shows besides itself: an action's outcome, a form's state, a question or an alert. */
export type Shown = Partial<
  Pick<
    PageReply,
    | "status"
    | "notice"
    | "warning"
    | "secret"
    | "secretLabel"
    | "secretHelp"
    | "state"
    | "location"
    | "alert"
    | "confirm"
  >
>;

/** The page at `url` (its path and query) in the request's format, with what the request brought. */
export async function showPage(
  req: FastifyRequest,
  reply: FastifyReply,
  format: Format,
  url: string,
  extra: Shown = {},
) {
  const { path, query } = parseUrl(url);
  const ctx = ctxOf(req);
  const { view, actions, resolved } = await registry.view(ctx, path, query);
  // Only a browser's forms ask for the field; markdown clients read the 403 that names it.
  const reconfirm =
    format === "html"
      ? new Set(
          actions.filter((action) => registry.asksConfirmation(ctx, action)).map((action) => action.name),
        )
      : undefined;
  return sendPage(req, reply, {
    reconfirm,
    status: extra.status ?? 200,
    format,
    path,
    view,
    actions,
    scope: resolved.scope,
    ...extra,
  });
}
