// Two-factor through the real stack: a browser half signed in (password done, its step to
// go), codes computed with otpauth at chosen times, and an authenticator enrolled through the
// enrolment step the workspace policy forces (the way a person meets it at sign-in).
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { Secret, TOTP } from "otpauth";
import { type Browser, csrfOf, PASSWORD, type Person, testPrisma, type World } from "./app.ts";

export interface HalfSignedIn extends Browser {
  /** The answer to the password POST: 303 to the step. */
  signIn: LightMyRequestResponse;
  /** Where it sent the browser (/login/verify, /login/enrol, or the page when full). */
  step: string;
}

/** Signs in with the password through the real form and stops at the step it is sent to. */
export async function halfSignIn(
  app: FastifyInstance,
  world: World,
  who: Pick<Person, "email">,
  options: { next?: string } = {},
): Promise<HalfSignedIn> {
  const cookies: Record<string, string> = {};
  const headers = { host: world.host };
  const keep = (res: LightMyRequestResponse) => {
    for (const c of res.cookies) {
      if (c.value === "" || (c.expires && c.expires.getTime() < Date.now())) delete cookies[c.name];
      else cookies[c.name] = c.value;
    }
    return res;
  };
  const first = keep(await app.inject({ method: "GET", url: "/login", headers }));
  const signIn = keep(
    await app.inject({
      method: "POST",
      url: "/login",
      headers,
      cookies,
      payload: {
        email: who.email,
        password: PASSWORD,
        _csrf: csrfOf(first) ?? "",
        next: options.next ?? "/",
      },
    }),
  );
  const step = String(signIn.headers.location ?? "");
  const page = keep(await app.inject({ method: "GET", url: step, headers, cookies }));
  const browser: HalfSignedIn = {
    signIn,
    step,
    cookies,
    csrf: csrfOf(page) ?? "",
    get: async (url) => keep(await app.inject({ method: "GET", url, headers, cookies })),
    post: async (url, form) =>
      keep(
        await app.inject({
          method: "POST",
          url,
          headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
          cookies,
          payload: new URLSearchParams({ _csrf: browser.csrf, ...form }).toString(),
        }),
      ),
  };
  return browser;
}

/** The code an authenticator with `secret` shows at `timestamp` (ms). */
export function codeAt(secret: string, timestamp = Date.now()): string {
  return TOTP.generate({ secret: Secret.fromBase32(secret), timestamp, period: 30, digits: 6 });
}

/** The secret an enrolment page shows (its text, as a person would copy it). */
export function secretOn(page: LightMyRequestResponse): string {
  const shown = /class="totp-secret"[^>]*>([A-Z2-7 ]+)</.exec(page.body)?.[1];
  if (!shown) throw new Error(`no secret on the page: ${page.statusCode}`);
  return shown.replace(/ /g, "");
}

/** The recovery codes a page shows once. */
export function recoveryCodesOn(page: LightMyRequestResponse): string[] {
  return [...page.body.matchAll(/<li><code>([a-z0-9]{5}-[a-z0-9]{5})<\/code><\/li>/g)].map((m) => m[1]!);
}

/**
 * Enrols `who` in TOTP the way the policy makes them at sign-in (required for everyone for
 * the moment, then the workspace's policy as it was): the secret, the recovery codes, and
 * the browser now fully signed in.
 */
export async function enrolAtSignIn(app: FastifyInstance, world: World, who: Person) {
  const db = testPrisma();
  const before = await db.tenant.findUniqueOrThrow({ where: { id: world.tenant.id } });
  await db.tenant.update({ where: { id: world.tenant.id }, data: { twoFactorPolicy: "everyone" } });
  const browser = await halfSignIn(app, world, who);
  await browser.post("/login/enrol/start", {});
  const secret = secretOn(await browser.get("/login/enrol"));
  const done = await browser.post("/login/enrol", { code: codeAt(secret) });
  await db.tenant.update({
    where: { id: world.tenant.id },
    data: { twoFactorPolicy: before.twoFactorPolicy },
  });
  return { browser, secret, codes: recoveryCodesOn(done), done };
}

/** The account mails queued for a person of this kind (services/accounts/security-events.ts). */
export function securityMails(who: Pick<Person, "id">, kind: string) {
  return testPrisma().outboundEmail.findMany({
    where: { userId: who.id, kind: `account.security.${kind}` },
  });
}
