// The JSON half of the passkey ceremonies (public/passkeys.js drives them in the browser):
// options carrying a fresh challenge, then the authenticator's answer checked by
// services/accounts/passkeys.ts. Renaming and removing are registry actions on the security
// page; these exist only because an authenticator answers a script, not a form. Adding one
// needs a person's session (never a token: an agent has no authenticator, and a passkey is a
// way in), and the CSRF header every cookie-borne write carries (plugins/auth.ts).
import { readFileSync } from "node:fs";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { setFlash } from "../http/flash.ts";
import { beginSession, finishSignIn, safeNext } from "../http/sign-in.ts";
import { ForbiddenError, UnauthorizedError, ValidationError } from "../lib/errors.ts";
import { sha256 } from "../lib/ids.ts";
import { textProblem } from "../lib/text.ts";
import {
  addPasskey,
  authenticationOptions,
  passkeyRefused,
  type RelyingParty,
  registrationOptions,
  verifyPasskey,
} from "../services/accounts/passkeys.ts";
import { confirmationStale } from "../services/accounts/step-up.ts";
import { securityPath } from "../services/actions/sessions.ts";
import { BROWSER_BUNDLE_PATH } from "../services/pages/security-passkeys.ts";

/** The browser half of @simplewebauthn, served as it ships, under /assets like our own scripts. */
const BROWSER_BUNDLE = new URL(
  "../../node_modules/@simplewebauthn/browser/dist/bundle/index.umd.min.js",
  import.meta.url,
);

/** The workspace as this browser reached it: the RP ID is its host without the port. */
export function relyingParty(req: FastifyRequest): RelyingParty {
  return { id: req.hostname, origin: `${req.protocol}://${req.host}`, name: req.tenant!.name };
}

const registration = z.object({
  name: z
    .string()
    .trim()
    .min(1, "required")
    .max(60, "at most 60 characters")
    .refine((name) => !textProblem(name), "letters, digits and punctuation only"),
  // Checked field by field by @simplewebauthn; here only bounded.
  response: z.record(z.string(), z.unknown()),
});

/** The signed-in person behind a browser's session, or a 401: a token cannot add a passkey. */
function sessionOf(req: FastifyRequest): { userId: string; sessionId: string } {
  if (!req.actor || req.authVia !== "session" || !req.sessionId || req.actor.kind !== "person")
    throw new UnauthorizedError("Passkeys are added from a signed-in browser, on your security page.");
  return { userId: req.actor.id, sessionId: req.sessionId };
}

/** The half session of a password sign-in waiting for its second step, or a 401. */
function secondStepOf(req: FastifyRequest) {
  if (req.pendingSession?.stage !== "second_factor")
    throw new UnauthorizedError(
      "No sign-in is waiting for its second step: log in with your password first.",
    );
  return req.pendingSession;
}

const signIn = z.object({
  response: z.record(z.string(), z.unknown()),
  next: z.string().max(2000).optional(),
});

/**
 * What a password-less sign-in's challenge is bound to: this browser's pre-session cookie
 * (the one its CSRF token is made from), hashed: a challenge handed to one browser is
 * worthless in another.
 */
function browserBinding(app: FastifyInstance, req: FastifyRequest): string {
  const nonce = app.cookieJar.read(req, "csrf");
  if (!nonce) throw new ForbiddenError("Missing or invalid CSRF token: reload the page and try again.");
  return `browser:${sha256(nonce)}`;
}

function refusedBody(error: z.ZodError): ValidationError {
  return new ValidationError(
    error.issues.map((issue) => ({
      field: String(issue.path[0] ?? ""),
      label: issue.path[0] === "name" ? "Name" : "Passkey",
      message: issue.message,
    })),
  );
}

export default async function passkeyRoutes(app: FastifyInstance) {
  const bundle = readFileSync(BROWSER_BUNDLE);
  app.get(BROWSER_BUNDLE_PATH, (_req, reply) =>
    reply.type("text/javascript; charset=utf-8").header("cache-control", "public, max-age=3600").send(bundle),
  );

  app.post("/passkeys/registration/options", async (req, reply) => {
    const { userId, sessionId } = sessionOf(req);
    // A passkey is a way in: like the other sign-in changes, it needs a recent confirmation.
    if (confirmationStale(req.confirmation?.at))
      throw new ForbiddenError(
        `Adding a passkey needs a recent confirmation that it is you: confirm at /confirm?next=${encodeURIComponent(securityPath(req.actor!.handle))} first, then add it.`,
      );
    const person = await app.prisma.user.findUniqueOrThrow({ where: { id: userId } });
    const options = await registrationOptions(app.prisma, relyingParty(req), person, `session:${sessionId}`);
    return reply.header("cache-control", "no-store").send(options);
  });

  app.post("/passkeys/registration", async (req, reply) => {
    const { userId, sessionId } = sessionOf(req);
    const parsed = registration.safeParse(req.body ?? {});
    if (!parsed.success) throw refusedBody(parsed.error);
    const person = await app.prisma.user.findUniqueOrThrow({ where: { id: userId } });
    const passkey = await addPasskey(app.prisma, relyingParty(req), person, {
      binding: `session:${sessionId}`,
      response: parsed.data.response,
      name: parsed.data.name,
      address: req.ip,
      origin: `${req.protocol}://${req.host}`,
    });
    const location = securityPath(person.handle);
    setFlash(req, reply, { notice: `Passkey “${passkey.name}” added.` });
    return reply.code(201).send({ location, passkey: { id: passkey.id, name: passkey.name } });
  });

  // Signing in with a passkey alone (docs/securing-accounts.md says why that is sound): any
  // discoverable passkey of this workspace; the browser lets the person pick one.
  app.post("/login/passkey/options", async (req, reply) => {
    const options = await authenticationOptions(app.prisma, relyingParty(req), {
      tenantId: req.tenant!.id,
      purpose: "sign_in",
      binding: browserBinding(app, req),
      userId: null,
    });
    return reply.header("cache-control", "no-store").send(options);
  });

  app.post("/login/passkey", async (req, reply) => {
    const parsed = signIn.safeParse(req.body ?? {});
    if (!parsed.success) throw refusedBody(parsed.error);
    const binding = browserBinding(app, req);
    const passkey = await verifyPasskey(
      app.prisma,
      relyingParty(req),
      { tenantId: req.tenant!.id, purpose: "sign_in", binding },
      parsed.data.response,
    );
    const user = await app.prisma.user.findUniqueOrThrow({ where: { id: passkey.userId } });
    if (user.kind !== "person" || user.archivedAt) throw passkeyRefused("this passkey signs nobody in here");
    if (user.deactivatedAt)
      throw passkeyRefused("this account has been deactivated: a workspace admin can reactivate it");
    // A user-verified passkey is two factors on its own: the session starts full.
    return beginSession(app, req, reply, user, { method: "passkey", next: safeNext(parsed.data.next) });
  });

  // The second step of a password sign-in, with one of that person's passkeys: the challenge
  // names them and is bound to the half session, so only their passkey in this browser answers.
  app.post("/login/verify/passkey/options", async (req, reply) => {
    const pending = secondStepOf(req);
    const options = await authenticationOptions(app.prisma, relyingParty(req), {
      tenantId: req.tenant!.id,
      purpose: "second_factor",
      binding: `session:${pending.id}`,
      userId: pending.user.id,
    });
    return reply.header("cache-control", "no-store").send(options);
  });

  app.post("/login/verify/passkey", async (req, reply) => {
    const pending = secondStepOf(req);
    const parsed = signIn.safeParse(req.body ?? {});
    if (!parsed.success) throw refusedBody(parsed.error);
    await verifyPasskey(
      app.prisma,
      relyingParty(req),
      { tenantId: req.tenant!.id, purpose: "second_factor", binding: `session:${pending.id}` },
      parsed.data.response,
    );
    const next = safeNext(parsed.data.next);
    if (!(await finishSignIn(app, req, reply, pending.user)))
      return reply.redirect(`/login?next=${encodeURIComponent(next)}`, 303);
    return reply.redirect(next, 303);
  });
}
