// POST /hooks/:id on a tenant's host: another system delivers a signed body and one of
// the tenant's agents starts a run. Not a registry page: it authenticates by signature,
// not a session or token, and must see the raw bytes it signed. Its own plugin context,
// so its body parsers (raw, 64 KB) and its JSON errors stay here; machine clients read
// the answer, so every answer is JSON, errors included.
import { createHash } from "node:crypto";
import type { FastifyError, FastifyInstance, FastifyReply } from "fastify";
import { AppError, NotFoundError, TooManyRequestsError } from "../lib/errors.ts";
import { textProblem } from "../lib/text.ts";
import { isTransient } from "../lib/transient.ts";
import {
  type Delivery,
  deliver,
  findWebhook,
  openSecret,
  verifySignature,
  type WebhookWithAgent,
} from "../services/agents/automations/webhooks.ts";
import { tenantSettings } from "../services/agents/core/settings.ts";

export const WEBHOOK_BODY_LIMIT = 64 * 1024;
const TYPES = { "application/json": "json", "text/plain": "text" } as const;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
// Unknown, disabled, archived, agents off, or another tenant's: one answer, so it tells nothing.
const NO_SUCH = "No such webhook.";

declare module "fastify" {
  interface FastifyRequest {
    webhook?: WebhookWithAgent;
  }
}

const fail = (reply: FastifyReply, status: number, error: string) =>
  reply.code(status).type("application/json; charset=utf-8").send({ error });

/** The body as text of its declared kind, or why it is refused (400). */
function readBody(kind: Delivery["kind"], body: Buffer): string | { refused: string } {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    return { refused: "The body is not valid UTF-8 text." };
  }
  const problem = textProblem(text);
  if (problem) return { refused: `The body ${problem}.` };
  if (kind === "json")
    try {
      JSON.parse(text);
    } catch {
      return { refused: "The body is not valid JSON (send text/plain for anything else)." };
    }
  return text;
}

/** The sender's delivery id, else the body's sha256: the key that makes a redelivery find its run. */
function deliveryKey(header: unknown, body: Buffer): string | { refused: string } {
  if (header === undefined) return createHash("sha256").update(body).digest("hex");
  if (typeof header !== "string" || !/^[A-Za-z0-9._:-]{1,200}$/.test(header))
    return { refused: "X-Cadre-Delivery must be 1–200 letters, digits and . _ : -" };
  return header;
}

export default async function webhookRoutes(app: FastifyInstance, opts: { scheme: "http" | "https" }) {
  app.decorateRequest("webhook", undefined);
  app.removeAllContentTypeParsers();
  for (const type of Object.keys(TYPES))
    app.addContentTypeParser(type, { parseAs: "buffer", bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) =>
      done(null, body),
    );

  app.setErrorHandler(async (err: FastifyError, req, reply) => {
    if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE")
      return fail(reply, 415, "Send the body as application/json or text/plain.");
    if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE")
      return fail(reply, 413, `The body is larger than ${WEBHOOK_BODY_LIMIT / 1024} KB.`);
    if (err instanceof TooManyRequestsError) reply.header("Retry-After", String(err.retryAfterSeconds));
    if (err instanceof AppError) return fail(reply, err.status, err.message);
    if (isTransient(err)) {
      req.log.warn({ err }, "transient failure on a webhook delivery, answered 503");
      reply.header("Retry-After", "2");
      return fail(reply, 503, "Briefly unavailable; nothing was recorded. Deliver it again in a moment.");
    }
    if (err.statusCode && err.statusCode < 500) return fail(reply, err.statusCode, err.message);
    req.log.error({ err }, "webhook delivery failed");
    return fail(reply, 500, `Something went wrong on our side (request ${req.id}).`);
  });

  // Before the body is read: an unknown webhook is a 404 whatever was sent to it.
  app.addHook("onRequest", async (req) => {
    const { id } = req.params as { id?: string };
    const hook =
      req.tenant && id && /^[a-z0-9]{6,32}$/.test(id)
        ? await findWebhook(app.prisma, req.tenant.id, id)
        : null;
    // Agents switched off for the workspace: nothing would run, and that is no business of the sender's.
    if (!hook || !tenantSettings(hook.tenant).agents_enabled) throw new NotFoundError(NO_SUCH);
    req.webhook = hook;
  });

  app.post("/hooks/:id", { config: { signed: true }, bodyLimit: WEBHOOK_BODY_LIMIT }, async (req, reply) => {
    const hook = req.webhook!;
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const type = (req.headers["content-type"] ?? "")
      .split(";")[0]!
      .trim()
      .toLowerCase() as keyof typeof TYPES;
    const kind = TYPES[type];
    if (!kind) return fail(reply, 415, "Send the body as application/json or text/plain.");
    const verdict = verifySignature(openSecret(hook), req.headers["x-cadre-signature"], body);
    if (verdict === "stale")
      return fail(reply, 401, "The signature's timestamp is more than 5 minutes away from now.");
    if (verdict !== "ok")
      return fail(reply, 401, "The signature does not match (X-Cadre-Signature: t=…,v1=…).");
    const text = readBody(kind, body);
    if (typeof text !== "string") return fail(reply, 400, text.refused);
    const key = deliveryKey(req.headers["x-cadre-delivery"], body);
    if (typeof key !== "string") return fail(reply, 400, key.refused);
    const out = await deliver(app.prisma, hook, { kind, text, bytes: body.length, key });
    if ("retryAfterSeconds" in out)
      throw new TooManyRequestsError(
        `More than ${hook.ratePerMinute} deliveries a minute to this webhook.`,
        out.retryAfterSeconds,
      );
    const path = `/subagents/${hook.agent.handle}/runs/${out.run.id}`;
    return reply
      .code(202)
      .header("Location", path)
      .send({ run: out.run.id, url: `${opts.scheme}://${req.headers.host}${path}`, status: out.run.status });
  });
}
