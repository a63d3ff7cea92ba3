// GET /secrets/:id: the page a browser's form redirects to after it made a secret (an API
// token, a webhook's signing secret), showing it once. Not a registry page: only the
// session whose form made it may load it, markdown and token clients get their secret in
// the action's own answer, and nothing here may be cached (the Back button after logout).
import type { FastifyInstance } from "fastify";
import { takeFlash } from "../http/flash.ts";
import { sendLayout } from "../http/render.ts";
import { NotFoundError } from "../lib/errors.ts";
import { escapeHtml, markdownToHtml } from "../services/registry/html.ts";
import { takeSecret } from "../services/reveals.ts";

const GONE =
  "Shown once, and not kept anywhere: Cadre cannot show this secret again. If it was not copied, make a new one (rotate the webhook's secret, or create a new token and revoke this one).";

export default async function secretRoutes(app: FastifyInstance) {
  app.get<{ Params: { id: string } }>("/secrets/:id", async (req, reply) => {
    if (!req.tenant || req.authVia !== "session" || !req.sessionId) throw new NotFoundError("No such page.");
    reply.header("Cache-Control", "no-store");
    const taken = /^[a-z0-9]{24}$/.test(req.params.id)
      ? await takeSecret(app.prisma, { tenantId: req.tenant.id, sessionId: req.sessionId, id: req.params.id })
      : null;
    const flash = takeFlash(req, reply);
    if (!taken || taken.shown) {
      const back = taken ? `<p><a href="${escapeHtml(taken.location)}">Back</a></p>` : "";
      reply.code(410);
      return sendLayout(req, reply, {
        title: "Shown once",
        breadcrumb: [{ label: "Home", path: "/" }, { label: "Shown once" }],
        content: `<p>${escapeHtml(GONE)}</p>${back}`,
      });
    }
    const { reveal } = taken;
    return sendLayout(req, reply, {
      title: reveal.label,
      breadcrumb: [
        { label: "Home", path: "/" },
        { label: "Back", path: reveal.location },
        { label: reveal.label },
      ],
      notice: flash?.notice,
      secret: reveal.secret,
      secretLabel: reveal.label,
      secretHelpHtml: reveal.help ? markdownToHtml(reveal.help) : undefined,
      content: `<p>Copied it? <a href="${escapeHtml(reveal.location)}">Done, back to where you were</a>. Reloading this page will not show it again.</p>`,
    });
  });
}
