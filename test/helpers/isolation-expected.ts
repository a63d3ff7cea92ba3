// What the tenant-isolation sweep expects (test/tenant-isolation.test.ts): the actions and pages
// it treats apart, each with why (a new entry needs its reason beside it), and the answer B
// must get for each kind of request.
import type { LightMyRequestResponse } from "fastify";
import type { Format, Mode } from "./isolation-callers.ts";
/**
 * Actions defined but listed on no page. Known bug, tracked by the it.fails in
 * test/subagents.test.ts: src/services/pages/subagents.ts does not list them on
 * /subagents/:handle. Remove them here once listed; the sweep then covers them.
 */
export const KNOWN_UNLISTED = new Set<string>();
/** Actions only a subagent may use: A's people get a 403 for them, which still proves the page resolved. */
export const NOT_FOR_PEOPLE = new Set(["update_scratchpad", "call_tool"]);
/** Actions that succeed only against a real OpenID Provider (saving discovers it): sso.test.ts runs them; here B is refused. */
export const NEEDS_AN_IDENTITY_PROVIDER = new Set(["set_sso_provider", "remove_sso_provider"]);
/** Actions that succeed only with a real authenticator's code (two-factor-settings.test.ts runs them); here a wrong code or none. */
export const NEEDS_AN_AUTHENTICATOR = new Set(["confirm_two_factor", "renew_recovery_codes"]);
/**
 * Pages that show none of A's content even to A (so the positive control cannot look for A's
 * mark): a search with no query, switches, settings nobody set, one's own sessions.
 */
export const NO_CONTENT = new Set([
  "/search",
  // The shared seed's alice is no workspace admin here: she reads only that admins invite.
  "/settings/invitations",
  "/settings/agents",
  // Hostnames are lower-case: A's mark, upper-case, cannot be in one.
  "/settings/hostnames",
  // Single sign-on: the seeds set none, so A's page shows only that it is not set up.
  "/settings/sso",
  // The two-factor requirement: words, and the form's choice.
  "/settings/sign-in",
  "/u/:handle/settings/notifications",
  "/u/:handle/settings/security",
  // A person's /tools points at their settings; a call's own page (`?call=`) is tried below.
  "/tools",
  // Host names are lower-case, as hostnames are.
  "/settings/tools",
]);

/** What B gets for one request: `want` says whether the status is right and what it should have been. */
export function expectation(
  mode: Mode,
  shared: boolean,
  kind: "page" | "describe" | "post",
  format: Format,
  aRef: boolean,
) {
  if (mode.endsWith("A host")) {
    // Another tenant's credential is no credential here: a token is refused outright (401),
    // a browser session is sent to log in.
    if (kind !== "post" && format === "html" && mode === "B session on A host")
      return {
        text: "303 → /login",
        ok: (r: LightMyRequestResponse) =>
          r.statusCode === 303 && String(r.headers.location).startsWith("/login"),
      };
    if (kind === "post")
      return { text: "401/403", ok: (r: LightMyRequestResponse) => [401, 403].includes(r.statusCode) };
    return { text: "401", ok: (r: LightMyRequestResponse) => r.statusCode === 401 };
  }
  // A's objects, A-only studio or user under B's host: nothing there.
  if (!shared) return { text: "404", ok: (r: LightMyRequestResponse) => r.statusCode === 404 };
  // Same path exists in B (studio `general`, user `alice`): B's own page, B's own data.
  if (kind === "page")
    return { text: "200 (B's own page)", ok: (r: LightMyRequestResponse) => r.statusCode === 200 };
  if (kind === "describe")
    return {
      text: "200/403 (B's own page)",
      ok: (r: LightMyRequestResponse) => [200, 403].includes(r.statusCode),
    };
  if (aRef)
    return {
      text: "400/403/404/409 (params name A's objects)",
      ok: (r: LightMyRequestResponse) => [400, 403, 404, 409].includes(r.statusCode),
    };
  return {
    text: "any non-5xx (B acting on its own page)",
    ok: (r: LightMyRequestResponse) => r.statusCode < 500 && r.statusCode !== 401,
  };
}
