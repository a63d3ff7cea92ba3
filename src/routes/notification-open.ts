// GET /notifications/:id/open: where a notification's link goes in a browser. It marks the
// notification read (with the person's other unread ones about the same page) and sends them
// on to that page, as Slack and Linear do. Why a route of its own and not "opening a page
// reads what points at it": a page's GET stays safe for every caller (the isolation sweep,
// markdown clients, agents reading it, a reload), and what changes is named by the URL the
// person chose to open. Not a registry page, like /secrets/:id: only a signed-in browser
// session opens one (an agent or a script dismisses by id); a mail's links go to the page
// itself, so a mail scanner following them reads nothing.
import type { FastifyInstance } from "fastify";
import { NotFoundError, UnauthorizedError } from "../lib/errors.ts";
import { openNotification } from "../services/notifications.ts";

export default async function notificationOpenRoutes(app: FastifyInstance) {
  app.get<{ Params: { id: string } }>("/notifications/:id/open", async (req, reply) => {
    // Signed out, a browser is sent to sign in and comes back here (errors.ts).
    if (!req.tenant || !req.actor) throw new UnauthorizedError();
    if (req.authVia !== "session" || req.actor.kind !== "person")
      throw new NotFoundError("No such notification of yours.");
    const path = /^[a-z0-9]{1,40}$/.test(req.params.id)
      ? await openNotification(app.prisma, { tenantId: req.tenant.id, userId: req.actor.id }, req.params.id)
      : null;
    if (!path) throw new NotFoundError("No such notification of yours.");
    reply.header("Cache-Control", "no-store");
    return reply.redirect(path, 303);
  });
}
