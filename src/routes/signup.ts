// Self-serve sign-up (SIGNUP; services/accounts/signup.ts). On a host that names no workspace
// (the bare BASE_DOMAIN, also under DEFAULT_WORKSPACE: plugins/tenancy.ts lets these paths
// through before its fallback), /signup asks for an address and /signup/<token> for the
// workspace and a password. On the new workspace's own host, /signup/<token> is the sign-in
// hand-over the sign-up redirects to. Closed: 404 with a page saying so.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { negotiate } from "../http/format.ts";
import { sendLayout } from "../http/render.ts";
import { AppError, NotFoundError, TooManyRequestsError, ValidationError } from "../lib/errors.ts";
import { baseOrigin, type OriginConfig, workspaceOrigin } from "../lib/origin.ts";
import { storable, textProblem } from "../lib/text.ts";
import {
  checkSignupLink,
  completeSignup,
  requestSignup,
  SIGNUP_ANSWER,
  type SignupPolicy,
  takeHandover,
} from "../services/accounts/signup.ts";
import { emailProblem } from "../services/accounts/workspaces.ts";
import {
  countAttempt,
  loginSucceeded,
  NO_WORKSPACE,
  type ThrottleSettings,
} from "../services/login-throttle.ts";
import { escapeHtml } from "../services/registry/html.ts";
import { createSession, type SessionLimits } from "../services/sessions.ts";
import { emailForm, type SignupFormState, signupForm } from "./signup-forms.ts";

/** The paths tenancy serves with no workspace on a host that names none. */
export const isSignupPath = (url: string) => /^\/signup([/?]|$)/.test(url);

const emailBody = z.object({ email: z.string().trim().toLowerCase().max(200).default("") });
const signupBody = z.object({
  workspace_name: z.string().max(200).default(""),
  handle: z.string().max(200).default(""),
  name: z.string().max(200).default(""),
  password: z.string().max(1000).default(""),
});
const tokenParams = z.object({ token: z.string().max(200) });

const CLOSED = "Sign-up is closed on this server: ask its operator for a workspace.";
const HANDOVER_REFUSED =
  "This sign-in link from your sign-up was already used or has expired: log in with your address and the password you chose.";

export interface SignupRouteOptions {
  policy: SignupPolicy;
  sessionLimits: SessionLimits;
  throttle: ThrottleSettings;
  origin: OriginConfig;
}

export default async function signupRoutes(app: FastifyInstance, opts: SignupRouteOptions) {
  const markdown = (req: FastifyRequest) => negotiate(req, req.url.split("?")[0]!).format === "markdown";
  const page = (req: FastifyRequest, reply: FastifyReply, title: string, content: string) =>
    sendLayout(req, reply, { title, breadcrumb: [], content });
  const sendMarkdown = (reply: FastifyReply, text: string) =>
    reply.type("text/markdown; charset=utf-8").header("Vary", "Accept").send(text);
  const base = baseOrigin(opts.origin);
  // Sign-up answers only on a host that names no workspace, and only when open; a workspace's
  // host has only the hand-over. Before auth's CSRF check, so a closed POST is a 404 too.
  app.addHook("onRequest", async (req) => {
    const handover = req.method === "GET" && req.routeOptions.url === "/signup/:token";
    if (req.tenant && !handover)
      throw new NotFoundError(`Sign-up is at ${base}/signup, not on a workspace's address.`);
    if (!req.tenant && !opts.policy.open) throw new NotFoundError(CLOSED);
  });

  app.get("/signup", async (req, reply) => {
    if (markdown(req))
      return sendMarkdown(
        reply,
        `# Create a workspace\n\nPOST \`email\` here: a link to create your workspace is mailed to it when sign-up is open to that address. The answer is the same either way.\n`,
      );
    return page(req, reply, "Create a workspace", emailForm(req.csrfToken));
  });

  app.post("/signup", async (req, reply) => {
    const email = emailBody.safeParse(req.body ?? {}).data?.email ?? "";
    const problem = textProblem(email)
      ? `“${storable(email)}” is not an email address.`
      : emailProblem(email);
    if (problem) {
      if (markdown(req)) throw new ValidationError([{ field: "email", label: "Email", message: problem }]);
      reply.code(400);
      return page(req, reply, "Create a workspace", emailForm(req.csrfToken, email, `Email: ${problem}`));
    }
    // Counted as a login attempt is, for the address asked about and the client: mailing
    // someone a hundred links is held back as guessing passwords is.
    const count = await countAttempt(app.prisma, opts.throttle, {
      tenantId: NO_WORKSPACE,
      email,
      address: req.ip,
    });
    if (count.waitSeconds) {
      const text = `Too many requests: try again in ${Math.ceil(count.waitSeconds / 60)} minutes.`;
      if (markdown(req)) throw new TooManyRequestsError(text, count.waitSeconds);
      reply.code(429).header("Retry-After", String(count.waitSeconds));
      return page(req, reply, "Create a workspace", emailForm(req.csrfToken, email, text));
    }
    await requestSignup(app.prisma, opts.policy, email, base);
    if (markdown(req)) return sendMarkdown(reply, `# Check your mail\n\n${SIGNUP_ANSWER}\n`);
    return page(req, reply, "Check your mail", `<div class="login"><p>${SIGNUP_ANSWER}</p></div>`);
  });

  app.get("/signup/:token", async (req, reply) => {
    const { token } = tokenParams.parse(req.params);
    if (req.tenant) return handOver(req, reply, token);
    const checked = await checkSignupLink(app.prisma, token);
    if (!checked.ok) return refused(req, reply, checked.reason);
    if (markdown(req))
      return sendMarkdown(
        reply,
        "# Create your workspace\n\nOpen this link in a browser to name your workspace and choose your password.\n",
      );
    return page(
      req,
      reply,
      "Create your workspace",
      signupForm(req.csrfToken, emptyState(checked.link.email)),
    );
  });

  app.post("/signup/:token", async (req, reply) => {
    const { token } = tokenParams.parse(req.params);
    const body = signupBody.safeParse(req.body ?? {});
    const sent = body.success ? body.data : signupBody.parse({});
    const form = {
      workspaceName: sent.workspace_name,
      handle: sent.handle,
      name: sent.name,
      password: sent.password,
    };
    try {
      const made = await completeSignup(app.prisma, {
        token,
        form,
        address: req.ip,
        reservedHandle: opts.origin.DEFAULT_WORKSPACE,
      });
      // The requests that mailed the link counted as attempts: the address starts over.
      await loginSucceeded(app.prisma, { tenantId: NO_WORKSPACE, email: made.email, address: req.ip });
      const origin = workspaceOrigin(opts.origin, made.tenant.subdomain);
      return reply.redirect(`${origin}/signup/${made.handoverToken}`, 303);
    } catch (err) {
      if (markdown(req) || !(err instanceof AppError)) throw err;
      if (err.status === 409) return refused(req, reply, err.message);
      const checked = await checkSignupLink(app.prisma, token);
      const errors =
        err instanceof ValidationError
          ? Object.fromEntries(err.issues.map((issue) => [issue.field, issue.message]))
          : {};
      reply.code(err.status);
      return page(
        req,
        reply,
        "Create your workspace",
        signupForm(req.csrfToken, {
          email: checked.ok ? (checked.link.email ?? "") : "",
          workspaceName: form.workspaceName,
          handle: form.handle,
          name: form.name,
          errors,
          alert: err.message,
        }),
      );
    }
  });

  /** On the new workspace's host: the hand-over from its sign-up becomes a session there. */
  async function handOver(req: FastifyRequest, reply: FastifyReply, token: string) {
    const tenant = req.tenant!;
    const outcome = await app.prisma.$transaction(async (tx) => {
      const taken = await takeHandover(tx, tenant.id, token);
      if ("refusal" in taken) return taken;
      const session = await createSession(tx, tenant.id, taken.user.id, opts.sessionLimits, {
        userAgent: req.headers["user-agent"] ?? "",
        ipAddress: req.ip,
      });
      return { session };
    });
    if ("refusal" in outcome) return refused(req, reply, HANDOVER_REFUSED, "/login");
    app.cookieJar.set(reply, "session", outcome.session.token, {
      signed: true,
      expires: outcome.session.expiresAt,
    });
    app.cookieJar.clear(reply, "csrf");
    return reply.redirect("/", 303);
  }

  /** A link that cannot be used: which way it failed, and what to do, in the request's format. */
  function refused(req: FastifyRequest, reply: FastifyReply, reason: string, next = "/signup") {
    if (markdown(req)) throw new AppError(410, reason);
    reply.code(410);
    const label = next === "/login" ? "Log in" : "Start the sign-up again";
    return page(
      req,
      reply,
      "This link does not work",
      `<div class="login"><p role="alert">${escapeHtml(reason)}</p><p><a href="${next}">${label}</a></p></div>`,
    );
  }
}

function emptyState(email: string | null): SignupFormState {
  return { email: email ?? "", workspaceName: "", handle: "", name: "", errors: {} };
}
