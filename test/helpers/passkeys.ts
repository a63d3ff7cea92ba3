// Passkey ceremonies over the app's JSON routes, as public/passkeys.js runs them, answered by
// the software authenticator (soft-authenticator.ts): add one from a signed-in browser, sign
// in with one from a browser that only opened /login.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { csrfOf, type World } from "./app.ts";
import { assertion, createCredential, type SoftCredential } from "./soft-authenticator.ts";

/** What a ceremony needs of a browser: its cookies and the CSRF token its pages carry. */
export interface Cookied {
  cookies: Record<string, string>;
  csrf: string;
}

/** The origin the app sees under inject: plain http, the workspace's host, no port. */
export const originOf = (world: World) => `http://${world.host}`;

function keep(browser: Cookied, res: LightMyRequestResponse) {
  for (const cookie of res.cookies) {
    if (cookie.value === "" || (cookie.expires && cookie.expires.getTime() < Date.now()))
      delete browser.cookies[cookie.name];
    else browser.cookies[cookie.name] = cookie.value;
  }
  return res;
}

export async function postJson(
  app: FastifyInstance,
  world: World,
  browser: Cookied,
  url: string,
  body: unknown,
): Promise<LightMyRequestResponse> {
  return keep(
    browser,
    await app.inject({
      method: "POST",
      url,
      headers: {
        host: world.host,
        accept: "application/json",
        "content-type": "application/json",
        "x-csrf-token": browser.csrf,
      },
      cookies: browser.cookies,
      payload: JSON.stringify(body),
    }),
  );
}

/** The message of a refused JSON call. */
export const refusal = (res: LightMyRequestResponse) =>
  (res.json() as { error?: { message?: string } }).error?.message ?? "";

/** Adds a passkey from a signed-in browser; the credential to sign in with. */
export async function addPasskey(
  app: FastifyInstance,
  world: World,
  browser: Cookied,
  name = "Laptop",
): Promise<SoftCredential> {
  const options = await postJson(app, world, browser, "/passkeys/registration/options", {});
  if (options.statusCode !== 200) throw new Error(`options: ${options.statusCode} ${options.body}`);
  const made = createCredential(options.json(), originOf(world));
  const added = await postJson(app, world, browser, "/passkeys/registration", {
    name,
    response: made.response,
  });
  if (added.statusCode !== 201) throw new Error(`registration: ${added.statusCode} ${added.body}`);
  return made.credential;
}

/** A browser that opened the login page: its pre-session cookie and that page's CSRF token. */
export async function atLogin(app: FastifyInstance, world: World): Promise<Cookied> {
  const browser: Cookied = { cookies: {}, csrf: "" };
  const page = keep(
    browser,
    await app.inject({ method: "GET", url: "/login", headers: { host: world.host } }),
  );
  browser.csrf = csrfOf(page) ?? "";
  return browser;
}

/** Options for a password-less sign-in, for `browser`. */
export async function signInOptions(app: FastifyInstance, world: World, browser: Cookied) {
  const options = await postJson(app, world, browser, "/login/passkey/options", {});
  if (options.statusCode !== 200) throw new Error(`options: ${options.statusCode} ${options.body}`);
  return options.json() as { challenge: string; rpId?: string };
}

/** Signs in with `credential` alone from a fresh login page: the answer to the final POST. */
export async function signInWithPasskey(
  app: FastifyInstance,
  world: World,
  credential: SoftCredential,
  browser?: Cookied,
) {
  const at = browser ?? (await atLogin(app, world));
  const options = await signInOptions(app, world, at);
  const response = assertion(credential, options, originOf(world));
  return { res: await postJson(app, world, at, "/login/passkey", { response }), response, browser: at };
}
