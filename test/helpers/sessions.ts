// Signing in as a particular browser (its User-Agent and its long-lived browser cookie), so a
// test can hold several sessions of one person and tell them apart on the security page.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { type Browser, csrfOf, PASSWORD, type Person, type World } from "./app.ts";

export const FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
export const SAFARI_IOS =
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1";

export interface SignedIn extends Browser {
  /** The answer to the sign-in POST (303 when it worked). */
  signIn: LightMyRequestResponse;
}

/** Signs in through the real form as `userAgent`, keeping cookies like a browser; `password` defaults to the suites'. */
export async function signInAs(
  app: FastifyInstance,
  world: World,
  who: Pick<Person, "email">,
  o: { userAgent?: string; password?: string; cookies?: Record<string, string> } = {},
): Promise<SignedIn> {
  const cookies: Record<string, string> = { ...o.cookies };
  const headers = { host: world.host, "user-agent": o.userAgent ?? FIREFOX };
  const keep = (res: LightMyRequestResponse) => {
    for (const c of res.cookies) {
      if (c.value === "" || (c.expires && c.expires.getTime() < Date.now())) delete cookies[c.name];
      else cookies[c.name] = c.value;
    }
    return res;
  };
  const first = keep(await app.inject({ method: "GET", url: "/login", headers, cookies }));
  const signIn = keep(
    await app.inject({
      method: "POST",
      url: "/login",
      headers,
      cookies,
      payload: { email: who.email, password: o.password ?? PASSWORD, _csrf: csrfOf(first) ?? "" },
    }),
  );
  const home = keep(await app.inject({ method: "GET", url: "/", headers, cookies }));
  const csrf = csrfOf(home) ?? "";
  return {
    signIn,
    cookies,
    csrf,
    get: async (url) => keep(await app.inject({ method: "GET", url, headers, cookies })),
    post: async (url, form) =>
      keep(
        await app.inject({
          method: "POST",
          url,
          headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
          cookies,
          payload: new URLSearchParams({ _csrf: csrf, ...form }).toString(),
        }),
      ),
  };
}

/** Whether the browser is still signed in: a settings page answers it, or sends it to log in. */
export async function signedIn(browser: Browser, handle: string): Promise<boolean> {
  const res = await browser.get(`/u/${handle}/settings`);
  return res.statusCode === 200;
}
