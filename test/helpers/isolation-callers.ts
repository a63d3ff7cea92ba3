// Requests for the isolation sweep as a given credential on a given host: B's token and
// session on B's host and on A's (the modes), GET / POST in markdown or HTML, a response in
// one line for a failure message, and the tally of requests a file prints at its end.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { type Browser, login, type World } from "./app.ts";
import type { Body } from "./isolation-params.ts";

export type Mode = "B token on B host" | "B session on B host" | "B token on A host" | "B session on A host";
export const MODES: Mode[] = [
  "B token on B host",
  "B session on B host",
  "B token on A host",
  "B session on A host",
];

/** B's alice with her token and with a session of hers, on B's host and on A's. */
export async function attackers(app: FastifyInstance, A: World, B: World): Promise<Record<Mode, Caller>> {
  const bBrowser = await login(app, B, B.alice);
  return {
    "B token on B host": { label: "B token", host: B.host, token: B.alice.token },
    "B session on B host": { label: "B session", host: B.host, browser: bBrowser },
    "B token on A host": { label: "B token", host: A.host, token: B.alice.token },
    "B session on A host": { label: "B session", host: A.host, browser: bBrowser },
  };
}

export type Format = "html" | "md" | "md-suffix";

export interface Caller {
  label: string;
  host: string;
  token?: string;
  browser?: Browser;
}

export async function get(app: FastifyInstance, c: Caller, url: string, format: Format) {
  const [path, query] = url.split("?");
  const target =
    format === "md-suffix" ? `${path === "/" ? "/index" : path}.md${query ? `?${query}` : ""}` : url;
  return app.inject({
    method: "GET",
    url: target,
    headers: {
      host: c.host,
      ...(format === "md" && { accept: "text/markdown" }),
      ...(c.token && { authorization: `Bearer ${c.token}` }),
    },
    ...(c.browser && { cookies: { ...c.browser.cookies } }),
  });
}

/** md: a JSON body with Accept: text/markdown; html: a form post like a browser's. Session posts carry the CSRF token. */
export async function post(app: FastifyInstance, c: Caller, url: string, format: "html" | "md", body: Body) {
  const csrf: Record<string, string> = c.browser ? { _csrf: c.browser.csrf } : {};
  return app.inject({
    method: "POST",
    url,
    headers: {
      host: c.host,
      ...(c.token && { authorization: `Bearer ${c.token}` }),
      ...(format === "md"
        ? { accept: "text/markdown", "content-type": "application/json" }
        : { "content-type": "application/x-www-form-urlencoded" }),
    },
    ...(c.browser && { cookies: { ...c.browser.cookies } }),
    payload:
      format === "md"
        ? JSON.stringify({ ...body.json, ...csrf })
        : new URLSearchParams({ ...body.form, ...csrf }).toString(),
  });
}

/** A response in one line, for a failure message. */
export const excerpt = (res: LightMyRequestResponse) =>
  `${res.statusCode}${res.headers.location ? ` → ${res.headers.location}` : ""}: ${res.body.slice(0, 160).replace(/\s+/g, " ")}`;

/** Requests per kind, printed when a file of the sweep ends: how much it tried. */
export function requestTally(title: string) {
  const tally = new Map<string, number>();
  return {
    count: (key: string) => tally.set(key, (tally.get(key) ?? 0) + 1),
    report() {
      const lines = [...tally].sort().map(([k, v]) => `  ${String(v).padStart(4)}  ${k}`);
      const total = [...tally.values()].reduce((a, b) => a + b, 0);
      console.info(`${title}: ${total} requests\n${lines.join("\n")}`);
    },
  };
}
