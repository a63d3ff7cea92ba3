// The pages an invitation opens before there is a session. /invite/<token>: the mailed
// invitation asks a name and a password, makes the account and signs in. /join/<token>: the
// workspace's shared link asks an address and mails an invitation to it (join-link.ts says why
// it never makes an account itself). As /setup/<token>, a GET only shows the form: a mail
// scanner that follows the link takes nothing.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import {
  fieldErrors,
  nameAndPasswordBody,
  nameAndPasswordForm,
  refusedLink,
  sendMarkdown,
  signInAfterLink,
  wantsMarkdown,
} from "../http/link-pages.ts";
import { sendLayout } from "../http/render.ts";
import { AppError, TooManyRequestsError, ValidationError } from "../lib/errors.ts";
import { type OriginConfig, workspaceOrigin } from "../lib/origin.ts";
import { acceptInvitation } from "../services/accounts/invitation-accept.ts";
import { invitePath, termsOf } from "../services/accounts/invitations.ts";
import { domainProblem, JOIN_ANSWER, joinPath, requestToJoin } from "../services/accounts/join-link.ts";
import { checkLink, consumeLink } from "../services/accounts/one-time-links.ts";
import { emailProblem } from "../services/accounts/workspaces.ts";
import { countAttempt, type ThrottleSettings } from "../services/login-throttle.ts";
import { escapeHtml } from "../services/registry/html.ts";
import type { SessionLimits } from "../services/sessions.ts";

const tokenParams = z.object({ token: z.string().max(200) });
const joinBody = z.object({ email: z.string().max(200).default(""), _csrf: z.string().optional() });

/** Posts back to its own address (no `action`): the link's token is not written into the page. */
function joinForm(csrf: string, workspace: string, email = "", error = ""): string {
  return `<div class="login">
${error ? `<div class="form-errors" role="alert">${escapeHtml(error)}</div>` : ""}
<p>Type your email address: we mail you a link to confirm it, then you choose your name and a password to join ${escapeHtml(workspace)}.</p>
<form method="post" class="action-form">
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">
<div class="field"><label for="email">Email</label><input type="email" id="email" name="email" value="${escapeHtml(email)}" autocomplete="email" required autofocus></div>
<button type="submit">Mail me a link</button>
</form>
</div>`;
}

export default async function invitationRoutes(
  app: FastifyInstance,
  opts: { sessionLimits: SessionLimits; throttle: ThrottleSettings; origin: OriginConfig },
) {
  // The configured address, never the request's Host: a forged Host must not put its own
  // address in front of somebody's link.
  const originOf = (req: FastifyRequest) => workspaceOrigin(opts.origin, req.tenant!.subdomain);
  const page = (req: FastifyRequest, reply: FastifyReply, title: string, content: string) =>
    sendLayout(req, reply, { title, breadcrumb: [], content });

  app.get("/invite/:token", async (req, reply) => {
    const { token } = tokenParams.parse(req.params);
    const path = invitePath(token);
    const checked = await checkLink(app.prisma, req.tenant!.id, "invite", token);
    if (!checked.ok) return refusedLink(req, reply, path, checked.reason);
    const title = `Join ${req.tenant!.name}`;
    if (wantsMarkdown(req, path))
      return sendMarkdown(
        reply,
        `# ${title}\n\nOpen this link in a browser to choose your name and password.\n`,
      );
    const role = termsOf(checked.link).role === "admin" ? "a workspace admin" : "a member";
    const intro = `<p>You are invited to ${escapeHtml(req.tenant!.name)} as ${role}, with the address ${escapeHtml(checked.link.email ?? "")}. Choose your name and a password.</p>`;
    return page(
      req,
      reply,
      title,
      nameAndPasswordForm(req.csrfToken, { name: "", errors: {} }, { button: "Join and sign in", intro }),
    );
  });

  app.post("/invite/:token", async (req, reply) => {
    const { token } = tokenParams.parse(req.params);
    const path = invitePath(token);
    const input = nameAndPasswordBody.safeParse(req.body ?? {}).data ?? { name: "", password: "" };
    try {
      const outcome = await acceptInvitation(app.prisma, {
        tenantId: req.tenant!.id,
        token,
        name: input.name,
        password: input.password,
        address: req.ip,
        origin: originOf(req),
      });
      if ("refusal" in outcome) return refusedLink(req, reply, path, outcome.refusal);
      await signInAfterLink(app, req, reply, outcome.user.id, opts.sessionLimits);
      return reply.redirect("/", 303);
    } catch (err) {
      if (wantsMarkdown(req, path) || !(err instanceof AppError)) throw err;
      if (err.status === 409) return refusedLink(req, reply, path, err.message);
      reply.code(err.status);
      const form = nameAndPasswordForm(
        req.csrfToken,
        { name: input.name, errors: fieldErrors(err), alert: err.message },
        { button: "Join and sign in" },
      );
      return page(req, reply, `Join ${req.tenant!.name}`, form);
    }
  });

  app.get("/join/:token", async (req, reply) => {
    const { token } = tokenParams.parse(req.params);
    const path = joinPath(token);
    const checked = await checkLink(app.prisma, req.tenant!.id, "join", token);
    if (!checked.ok) return refusedLink(req, reply, path, checked.reason);
    if (wantsMarkdown(req, path))
      return sendMarkdown(
        reply,
        `# Join ${req.tenant!.name}\n\nPOST \`email\` here: a link to confirm the address is mailed to it, and opening that link lets you choose your name and password.\n`,
      );
    return page(req, reply, `Join ${req.tenant!.name}`, joinForm(req.csrfToken, req.tenant!.name));
  });

  app.post("/join/:token", async (req, reply) => {
    const { token } = tokenParams.parse(req.params);
    const path = joinPath(token);
    const email = (joinBody.safeParse(req.body ?? {}).data?.email ?? "").trim().toLowerCase();
    const checked = await checkLink(app.prisma, req.tenant!.id, "join", token);
    if (!checked.ok) return refusedLink(req, reply, path, checked.reason);
    const problem = email
      ? (emailProblem(email) ?? domainProblem(checked.link.data, email))
      : "type your address";
    const refuse = (status: number, message: string) => {
      if (wantsMarkdown(req, path))
        throw status === 400
          ? new ValidationError([{ field: "email", label: "Email", message }])
          : new AppError(status, message);
      reply.code(status);
      return page(
        req,
        reply,
        `Join ${req.tenant!.name}`,
        joinForm(req.csrfToken, req.tenant!.name, email, `Email: ${message}`),
      );
    };
    if (problem) return refuse(400, problem);
    // Counted as a login attempt is, for the address and the client: mailing someone a hundred
    // confirmations is held back as guessing passwords is.
    const count = await countAttempt(app.prisma, opts.throttle, {
      tenantId: req.tenant!.id,
      email,
      address: req.ip,
    });
    if (count.waitSeconds) {
      reply.header("Retry-After", String(count.waitSeconds));
      const text = `Too many requests: try again in ${Math.ceil(count.waitSeconds / 60)} minutes.`;
      if (wantsMarkdown(req, path)) throw new TooManyRequestsError(text, count.waitSeconds);
      return refuse(429, text);
    }
    const refusal = await app.prisma.$transaction(async (tx) => {
      // Again in the transaction: a link turned off meanwhile mails nothing.
      const still = await consumeLink(tx, req.tenant!.id, "join", token);
      if (!still.ok) return still.reason;
      await requestToJoin(tx, { tenant: req.tenant!, joinLink: still.link, email, origin: originOf(req) });
      return null;
    });
    if (refusal) return refusedLink(req, reply, path, refusal);
    if (wantsMarkdown(req, path)) return sendMarkdown(reply, `# Check your mail\n\n${JOIN_ANSWER}\n`);
    return page(req, reply, "Check your mail", `<div class="login"><p>${escapeHtml(JOIN_ANSWER)}</p></div>`);
  });
}
