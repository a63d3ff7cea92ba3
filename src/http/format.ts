import type { FastifyRequest } from "fastify";

export type Format = "markdown" | "html";

/** `.md` suffix wins; otherwise markdown when the client ranks text/markdown above text/html. */
export function negotiate(req: FastifyRequest, path: string): { format: Format; path: string } {
  if (path.endsWith(".md")) {
    const bare = path.slice(0, -3);
    return { format: "markdown", path: bare === "/index" || bare === "" ? "/" : bare };
  }
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

export function isFormBody(req: FastifyRequest): boolean {
  return (req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded");
}
