import type { FastifyRequest } from "fastify";
import { AppError } from "../lib/errors.ts";

export type Format = "markdown" | "html";

/** The page a `.md` address names (`/studios/general.md` → `/studios/general`, `/index.md` → `/`); null without the suffix. */
export function withoutMdSuffix(path: string): string | null {
  if (!path.endsWith(".md")) return null;
  const bare = path.slice(0, -3);
  return bare === "/index" || bare === "" ? "/" : bare;
}

/** `.md` suffix wins; otherwise markdown when the client ranks text/markdown above text/html. */
export function negotiate(req: FastifyRequest, path: string): { format: Format; path: string } {
  const bare = withoutMdSuffix(path);
  if (bare !== null) return { format: "markdown", path: bare };
  return { format: prefersMarkdown(req.headers.accept) ? "markdown" : "html", path };
}

/** The highest quality an Accept header gives a type `types` accepts; -1 when it names none. */
function rank(accept: string, types: (type: string) => boolean): number {
  let best = -1;
  for (const part of accept.split(",")) {
    const [type, ...params] = part.trim().toLowerCase().split(";");
    const qParam = params.find((p) => p.trim().startsWith("q="));
    if (types(type ?? "")) best = Math.max(best, qParam ? Number(qParam.trim().slice(2)) : 1);
  }
  return best;
}

const PAGE_TYPES = new Set(["text/markdown", "text/x-markdown", "text/html", "text/*", "*/*"]);

/**
 * A page's format, or a 406 for a client that takes neither of a page's formats (`Accept:
 * application/json` alone): a page has no JSON representation worth keeping (it would be
 * the markdown in a string), and a 200 with HTML gave a JSON client what it did not ask for.
 * Asked before anything runs, so a refused POST wrote nothing. The error itself is JSON for
 * such a client (plugins/errors.ts), as 401s and 429s already are.
 */
export function pageFormat(req: FastifyRequest, path: string): { format: Format; path: string } {
  const chosen = negotiate(req, path);
  const accept = req.headers.accept;
  if (chosen.format === "html" && accept && rank(accept, (t) => PAGE_TYPES.has(t)) <= 0)
    throw new AppError(
      406,
      `Pages here are text/markdown or text/html, not ${accept.split(",")[0]!.trim().slice(0, 80)}: send \`Accept: text/markdown\` (or add .md to the address) or \`Accept: text/html\`.`,
    );
  return chosen;
}

export function prefersMarkdown(accept: string | undefined): boolean {
  if (!accept) return false;
  const md = rank(accept, (t) => t === "text/markdown" || t === "text/x-markdown");
  return md > 0 && md >= rank(accept, (t) => t === "text/html");
}

/**
 * A page's live updates (server-sent events) are a third format of its URL: asked for with
 * `Accept: text/event-stream`, as EventSource does, ranked above the others.
 */
export function wantsEvents(req: FastifyRequest, path: string): boolean {
  const accept = req.headers.accept;
  if (!accept || path.endsWith(".md")) return false;
  const events = rank(accept, (t) => t === "text/event-stream");
  return events > 0 && events >= rank(accept, (t) => t !== "text/event-stream");
}

/**
 * A client that asks for JSON and not for a page (an MCP client: `application/json,
 * text/event-stream`) hears its errors in JSON; every page is still markdown or HTML.
 */
export function prefersJson(accept: string | undefined): boolean {
  if (!accept) return false;
  const json = rank(accept, (t) => t === "application/json");
  return (
    json > 0 && json > rank(accept, (t) => ["text/html", "text/markdown", "text/x-markdown"].includes(t))
  );
}

export function isFormBody(req: FastifyRequest): boolean {
  return (req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded");
}
