// Pages a link from a mail opens before there is a session: a set-up link (cli/cadre.ts printed
// or mailed it). The GET only shows the form (a mail scanner that follows the link takes
// nothing); the POST takes the link in the transaction that sets the password, then signs in.
import type { FastifyInstance } from "fastify";
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
import { AppError } from "../lib/errors.ts";
import { checkLink } from "../services/accounts/one-time-links.ts";
import { completeSetup } from "../services/accounts/setup.ts";
import type { SessionLimits } from "../services/sessions.ts";

export default async function accountRoutes(app: FastifyInstance, opts: { sessionLimits: SessionLimits }) {
  app.get<{ Params: { token: string } }>("/setup/:token", async (req, reply) => {
    const path = `/setup/${req.params.token}`;
    const checked = await checkLink(app.prisma, req.tenant!.id, "setup", req.params.token);
    if (!checked.ok) return refusedLink(req, reply, path, checked.reason);
    const user = await app.prisma.user.findFirst({
      where: { id: checked.link.userId ?? "", tenantId: req.tenant!.id },
    });
    if (wantsMarkdown(req, path))
      return sendMarkdown(
        reply,
        `# Set up your account in ${req.tenant!.name}\n\nOpen this link in a browser to choose your name and password.\n`,
      );
    return sendLayout(req, reply, {
      title: `Set up your account in ${req.tenant!.name}`,
      breadcrumb: [],
      content: nameAndPasswordForm(req.csrfToken, { name: user?.name ?? "", errors: {} }),
    });
  });

  app.post<{ Params: { token: string } }>("/setup/:token", async (req, reply) => {
    const path = `/setup/${req.params.token}`;
    const body = nameAndPasswordBody.safeParse(req.body ?? {});
    const input = body.success ? body.data : { name: "", password: "" };
    try {
      const user = await completeSetup(app.prisma, {
        tenantId: req.tenant!.id,
        token: req.params.token,
        name: input.name,
        password: input.password,
        address: req.ip,
      });
      await signInAfterLink(app, req, reply, user.id, opts.sessionLimits);
      return reply.redirect("/", 303);
    } catch (err) {
      if (wantsMarkdown(req, path) || !(err instanceof AppError)) throw err;
      if (err.status === 409) return refusedLink(req, reply, path, err.message);
      reply.code(err.status);
      return sendLayout(req, reply, {
        title: `Set up your account in ${req.tenant!.name}`,
        breadcrumb: [],
        content: nameAndPasswordForm(req.csrfToken, {
          name: input.name,
          errors: fieldErrors(err),
          alert: err.message,
        }),
      });
    }
  });
}
