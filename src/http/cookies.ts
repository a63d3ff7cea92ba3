// Every cookie the app sets, under one policy: httpOnly, SameSite=Lax, path /, and over
// https Secure with the `__Host-` prefix. A browser accepts a `__Host-` cookie only from
// this very host, over https, without a Domain: a sibling subdomain (another tenant's
// page, say) can neither set nor overwrite it.
import type { FastifyReply, FastifyRequest } from "fastify";

// `browser`: a random id that outlives sessions, so a sign-in from a browser never seen is told apart.
const NAMES = {
  session: "cadre_session",
  csrf: "cadre_csrf",
  flash: "cadre_flash",
  browser: "cadre_browser",
  // An SSO sign-in under way: names its row (services/accounts/sso-sign-in.ts) for minutes.
  sso: "cadre_sso",
} as const;
export type CookieKind = keyof typeof NAMES;

export interface CookieJar {
  name(kind: CookieKind): string;
  read(req: FastifyRequest, kind: CookieKind): string | undefined;
  set(reply: FastifyReply, kind: CookieKind, value: string, o?: { signed?: boolean; expires?: Date }): void;
  clear(reply: FastifyReply, kind: CookieKind): void;
}

export function cookieJar(secure: boolean): CookieJar {
  const base = { path: "/", httpOnly: true, sameSite: "lax", secure } as const;
  const name = (kind: CookieKind) => (secure ? `__Host-${NAMES[kind]}` : NAMES[kind]);
  return {
    name,
    read: (req, kind) => req.cookies[name(kind)],
    set: (reply, kind, value, o = {}) => void reply.setCookie(name(kind), value, { ...base, ...o }),
    // The same attributes as when set: a browser drops a `__Host-` Set-Cookie without Secure.
    clear: (reply, kind) => void reply.clearCookie(name(kind), base),
  };
}
