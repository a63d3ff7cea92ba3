// Webhooks in tests: one created through the registry over HTTP (its secret read from the
// one answer that shows it), and deliveries signed the way another system would sign them.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { sign, signGithub } from "../../src/services/agents/automations/webhook-signatures.ts";
import { md, type Person, type World } from "./app.ts";

export interface Hook {
  id: string;
  secret: string;
  /** The answer that showed the secret. */
  res: LightMyRequestResponse;
}

const SECRET = /`(whsec_[A-Za-z0-9_-]{43})`/;

/** The secret in an answer of create_webhook or rotate_webhook_secret (markdown). */
export function secretIn(res: LightMyRequestResponse): string {
  const s = SECRET.exec(res.body)?.[1];
  if (!s) throw new Error(`no secret in ${res.statusCode}: ${res.body.slice(0, 300)}`);
  return s;
}

export async function createHook(
  app: FastifyInstance,
  w: World,
  who: Person,
  handle: string,
  params: { name: string; instruction?: string; signature?: "cadre" | "github" } = { name: "CI" },
): Promise<Hook> {
  const res = await md(app, w, who, "POST", `/subagents/${handle}/webhooks/actions/create_webhook`, params);
  if (res.statusCode !== 201) throw new Error(`create_webhook: ${res.statusCode} ${res.body.slice(0, 300)}`);
  const id = /POST \/hooks\/([a-z0-9]+)/.exec(res.body)?.[1];
  if (!id) throw new Error("create_webhook: no id in the answer");
  return { id, secret: secretIn(res), res };
}

export interface Send {
  secret?: string;
  /** Unix seconds the signature claims (default now). */
  at?: number;
  delivery?: string;
  contentType?: string;
  host?: string;
  /** Sent instead of a computed signature; null sends none. */
  signature?: string | null;
  /** Signed GitHub's way (X-Hub-Signature-256, X-GitHub-Delivery) instead of Cadre's. */
  github?: boolean;
  /** More headers (X-GitHub-Event). */
  headers?: Record<string, string>;
}

/** POSTs `body` to /hooks/:id, signed with `secret` as the README tells senders to (Cadre's way, or GitHub's). */
export function send(app: FastifyInstance, w: World, id: string, body: string | Buffer, o: Send = {}) {
  const at = o.at ?? Math.floor(Date.now() / 1000);
  const raw = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const secret = o.secret ?? "whsec_nobody";
  const computed = o.github ? signGithub(secret, raw) : `t=${at},v1=${sign(secret, at, raw)}`;
  const signature = o.signature === undefined ? computed : o.signature;
  const [sigHeader, deliveryHeader] = o.github
    ? ["x-hub-signature-256", "x-github-delivery"]
    : ["x-cadre-signature", "x-cadre-delivery"];
  return app.inject({
    method: "POST",
    url: `/hooks/${id}`,
    headers: {
      host: o.host ?? w.host,
      "content-type": o.contentType ?? "application/json",
      ...(signature !== null && { [sigHeader]: signature }),
      ...(o.delivery && { [deliveryHeader]: o.delivery }),
      ...o.headers,
    },
    payload: raw,
  });
}
