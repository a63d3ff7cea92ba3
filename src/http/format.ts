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

export function isFormBody(req: FastifyRequest): boolean {
  return (req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded");
}
