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

export function prefersMarkdown(accept: string | undefined): boolean {
  if (!accept) return false;
  let md = -1;
  let html = -1;
  for (const part of accept.split(",")) {
    const [type, ...params] = part.trim().toLowerCase().split(";");
    const qParam = params.find((p) => p.trim().startsWith("q="));
    const q = qParam ? Number(qParam.trim().slice(2)) : 1;
    if (type === "text/markdown" || type === "text/x-markdown") md = Math.max(md, q);
    if (type === "text/html") html = Math.max(html, q);
  }
  return md > 0 && md >= html;
}

/**
 * A page's live updates (server-sent events) are a third format of its URL: asked for with
 * `Accept: text/event-stream`, as EventSource does, ranked above the others.
 */
export function wantsEvents(req: FastifyRequest, path: string): boolean {
  const accept = req.headers.accept;
  if (!accept || path.endsWith(".md")) return false;
  let events = -1;
  let other = -1;
  for (const part of accept.split(",")) {
    const [type, ...params] = part.trim().toLowerCase().split(";");
    const qParam = params.find((p) => p.trim().startsWith("q="));
    const q = qParam ? Number(qParam.trim().slice(2)) : 1;
    if (type === "text/event-stream") events = Math.max(events, q);
    else other = Math.max(other, q);
  }
  return events > 0 && events >= other;
}

export function isFormBody(req: FastifyRequest): boolean {
  return (req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded");
}
