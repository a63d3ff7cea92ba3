// Where a connection's authorization server sends the person back after they allowed Cadre
// (services/tools/sign-in.ts). The state names the sign-in; the connection's own page decides
// whether this person may finish it (the registry resolves it: the one owner check), so a
// link carried to someone else's browser finishes nothing. The code never reaches a log: the
// request log writes paths, not query strings (plugins/audit.ts).
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { setFlash } from "../http/flash.ts";
import { ValidationError } from "../lib/errors.ts";
import { registry } from "../services/catalog/catalog.ts";
import { connectionPath } from "../services/tools/holder.ts";
import {
  CALLBACK_PATH,
  finishSignIn,
  listTools,
  maskSecrets,
  ownSecrets,
  setStatus,
  signInFor,
  type ToolConnection,
  ToolConnectionError,
} from "../services/tools/index.ts";
import { ctxOf } from "./page-context.ts";

const callbackQuery = z.object({
  state: z.string().max(200).optional(),
  code: z.string().max(4000).optional(),
  error: z.string().max(200).optional(),
});

export default async function toolSignInRoutes(app: FastifyInstance) {
  app.get(CALLBACK_PATH, async (req, reply) => {
    const ctx = ctxOf(req);
    const query = callbackQuery.parse(req.query);
    const connection = query.state ? await signInFor(app.prisma, ctx.tenant.id, query.state) : null;
    if (!connection)
      throw new ValidationError([
        {
          field: "state",
          label: "Sign-in",
          message:
            "no sign-in of a connection is under way with this link: start it again on the connection's page",
        },
      ]);
    const path = await connectionPath(app.prisma, connection);
    await registry.resolve(ctx, path); // 404 or 403 for anyone its page refuses
    const origin = `${req.protocol}://${req.headers.host}`;
    setFlash(req, reply, await finished(app, connection, query, origin));
    return reply.redirect(path, 303);
  });
}

/** The code exchanged, then the tools listed: each failure said in words, the first as a sign-in to do again. */
async function finished(
  app: FastifyInstance,
  connection: ToolConnection,
  query: z.infer<typeof callbackQuery>,
  origin: string,
) {
  try {
    if (!query.code)
      throw new ToolConnectionError(
        "needs_sign_in",
        `the server did not sign you in (${query.error ?? "no code"})`,
      );
    await finishSignIn(app.prisma, connection, query.code, origin);
  } catch (err) {
    // A server's error may echo what it was sent (a code, a client secret): masked first.
    const reason = maskSecrets(
      err instanceof Error ? err.message : String(err),
      ownSecrets(connection),
    ).slice(0, 300);
    await setStatus(app.prisma, connection, "needs_sign_in", reason);
    return { notice: `Signing in to “${connection.name}” did not work: ${reason}`, warning: true };
  }
  try {
    const tools = await listTools(app.prisma, connection);
    const count = `${tools.length} tool${tools.length === 1 ? "" : "s"}`;
    return { notice: `Signed in to “${connection.name}”: it lists ${count}`, warning: false };
  } catch (err) {
    // listTools recorded the status (unreachable, or a refusal of the new tokens).
    if (!(err instanceof ToolConnectionError)) throw err;
    return {
      notice: `Signed in to “${connection.name}”, but its server could not be used: ${err.message}`,
      warning: true,
    };
  }
}
