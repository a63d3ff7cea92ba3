import type { FastifyRequest } from "fastify";

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

/** The highest q the Accept header gives each of `types` (-1: not listed). */
function ranks(accept: string, types: Record<string, string[]>): Record<string, number> {
  const out = Object.fromEntries(Object.keys(types).map((k) => [k, -1]));
  for (const part of accept.split(",")) {
    const [type, ...params] = part.trim().toLowerCase().split(";");
    const qParam = params.find((p) => p.trim().startsWith("q="));
    const q = qParam ? Number(qParam.trim().slice(2)) : 1;
    for (const [k, names] of Object.entries(types))
      if (names.includes(type ?? "")) out[k] = Math.max(out[k]!, q);
  }
  return out;
}

export function prefersMarkdown(accept: string | undefined): boolean {
  if (!accept) return false;
  const { md, html } = ranks(accept, { md: ["text/markdown", "text/x-markdown"], html: ["text/html"] });
  return md! > 0 && md! >= html!;
}

/**
 * A client that asks for JSON and not for a page (an MCP client: `application/json,
 * text/event-stream`) hears its errors in JSON; every page is still markdown or HTML.
 */
export function prefersJson(accept: string | undefined): boolean {
  if (!accept) return false;
  const r = ranks(accept, {
    json: ["application/json"],
    page: ["text/html", "text/markdown", "text/x-markdown"],
  });
  return r.json! > 0 && r.json! > r.page!;
}

export function isFormBody(req: FastifyRequest): boolean {
  return (req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded");
}
