// Pages a link from a mail opens before there is a session: a set-up link (cli/cadre.ts printed
// or mailed it). The GET only shows the form (a mail scanner that follows the link takes
// nothing); the POST takes the link in the transaction that sets the password, then signs in.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { negotiate } from "../http/format.ts";
import { sendLayout } from "../http/render.ts";
import { AppError, ValidationError } from "../lib/errors.ts";
import { checkLink } from "../services/accounts/one-time-links.ts";
import { completeSetup } from "../services/accounts/setup.ts";
import { escapeHtml } from "../services/registry/html.ts";
import { createSession, type SessionLimits } from "../services/sessions.ts";

const setupBody = z.object({
  name: z.string().max(200).default(""),
  password: z.string().max(1000).default(""),
  _csrf: z.string().optional(),
});

interface FormState {
  name: string;
  errors: Record<string, string>;
  alert?: string;
}

// The form posts back to the page it is on: naming its address would repeat the link's token.
function setupForm(csrf: string, state: FormState): string {
  const error = (field: string) =>
    state.errors[field] ? `<p class="field-error" role="alert">${escapeHtml(state.errors[field])}</p>` : "";
  return `<div class="login">
${state.alert ? `<div class="form-errors" role="alert">${escapeHtml(state.alert)}</div>` : ""}
<form method="post" class="action-form">
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">
<div class="field"><label for="name">Your name</label><input id="name" name="name" value="${escapeHtml(state.name)}" autocomplete="name" required>${error("name")}</div>
<div class="field"><label for="password">Password</label><input type="password" id="password" name="password" autocomplete="new-password" required minlength="10">${error("password")}
<p class="hint">At least 10 characters; a few unrelated words together work well.</p></div>
<button type="submit">Set up and sign in</button>
</form>
</div>`;
}

/** A refused link's page, in the request's format: which refusal and what to do. */
function refused(req: FastifyRequest, reply: FastifyReply, path: string, reason: string) {
  reply.code(410);
  if (negotiate(req, path).format === "markdown")
    return reply
      .type("text/markdown; charset=utf-8")
      .header("Vary", "Accept")
      .send(`# This link cannot be used\n\n${reason}\n`);
  return sendLayout(req, reply, {
    title: "This link cannot be used",
    breadcrumb: [],
    content: `<p role="alert">${escapeHtml(reason)}</p>`,
  });
}

export default async function accountRoutes(app: FastifyInstance, opts: { sessionLimits: SessionLimits }) {
  app.get<{ Params: { token: string } }>("/setup/:token", async (req, reply) => {
    const path = `/setup/${req.params.token}`;
    const checked = await checkLink(app.prisma, req.tenant!.id, "setup", req.params.token);
    if (!checked.ok) return refused(req, reply, path, checked.reason);
    const user = await app.prisma.user.findFirst({
      where: { id: checked.link.userId ?? "", tenantId: req.tenant!.id },
    });
    if (negotiate(req, path).format === "markdown")
      return reply
        .type("text/markdown; charset=utf-8")
        .header("Vary", "Accept")
        .send(
          `# Set up your account in ${req.tenant!.name}\n\nOpen this link in a browser to choose your name and password.\n`,
        );
    return sendLayout(req, reply, {
      title: `Set up your account in ${req.tenant!.name}`,
      breadcrumb: [],
      content: setupForm(req.csrfToken, { name: user?.name ?? "", errors: {} }),
    });
  });

  app.post<{ Params: { token: string } }>("/setup/:token", async (req, reply) => {
    const path = `/setup/${req.params.token}`;
    const body = setupBody.safeParse(req.body ?? {});
    const input = body.success ? body.data : { name: "", password: "" };
    try {
      const user = await completeSetup(app.prisma, {
        tenantId: req.tenant!.id,
        token: req.params.token,
        name: input.name,
        password: input.password,
        address: req.ip,
      });
      const { token, expiresAt } = await createSession(
        app.prisma,
        req.tenant!.id,
        user.id,
        opts.sessionLimits,
        {
          userAgent: req.headers["user-agent"] ?? "",
          ipAddress: req.ip,
        },
      );
      app.cookieJar.set(reply, "session", token, { signed: true, expires: expiresAt });
      app.cookieJar.clear(reply, "csrf");
      return reply.redirect("/", 303);
    } catch (err) {
      if (negotiate(req, path).format === "markdown" || !(err instanceof AppError)) throw err;
      if (err.status === 409) return refused(req, reply, path, err.message);
      const errors =
        err instanceof ValidationError
          ? Object.fromEntries(err.issues.map((issue) => [issue.field, issue.message]))
          : {};
      reply.code(err.status);
      return sendLayout(req, reply, {
        title: `Set up your account in ${req.tenant!.name}`,
        breadcrumb: [],
        content: setupForm(req.csrfToken, { name: input.name, errors, alert: err.message }),
      });
    }
  });
}
