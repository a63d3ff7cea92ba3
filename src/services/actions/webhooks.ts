// An agent's inbound webhooks, managed by its owner: create one (its secret shown once),
// choose how senders sign, rotate the secret (the old one kept for a grace period), send a
// test delivery, disable, enable, delete. Agents never manage webhooks (capabilities.ts);
// the page resolves only for the agent's owner (loadAgent).
import { z } from "zod";
import type { WebhookSignature } from "../../generated/prisma/client.ts";
import { NotFoundError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { SCHEMES } from "../agents/automations/webhook-signatures.ts";
import { DEFAULT_RATE_PER_MINUTE, newSecret, sealSecret } from "../agents/automations/webhooks.ts";
import { when } from "../pages/format.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { fenced } from "../registry/markdown.ts";
import { type ActionCtx, type AgentScope, type Ctx, defineAction } from "../registry/types.ts";
import { idSchema, text } from "../validation.ts";

const peopleOnly = (ctx: Ctx) => (ctx.actor.kind === "person" ? null : "only people manage webhooks");

export const webhookId = idSchema.meta({
  label: "Webhook",
  description: "which webhook (the buttons beside each pick it)",
  pickedBeside: true,
  formerly: "webhook_id",
});

/**
 * How long a rotated-out secret still signs valid deliveries. A rotation is usually routine,
 * and a sender (GitHub's settings, a CI job's secret) is updated by hand, perhaps by someone
 * else, later that day: deliveries meanwhile must not be refused and lost (GitHub does not
 * redeliver by itself). A secret that leaked is rotated with "stops now" instead.
 */
export const ROTATION_GRACE_HOURS = 24;

const signatureParam = z.enum(["cadre", "github"]).meta({
  label: "Signature",
  optionLabels: {
    cadre: "Cadre's: X-Cadre-Signature, with a timestamp",
    github: "GitHub's: X-Hub-Signature-256",
  },
  description: "how the sender signs its deliveries",
});

/** How to use a new secret, shown with it that one time: a signed delivery to paste, and for GitHub where it goes. */
export function setupHelp(origin: string, id: string, secret: string, scheme: WebhookSignature): string {
  const url = `${origin}/hooks/${id}`;
  const signing =
    scheme === "cadre"
      ? [
          `SIG=$(printf '%s.%s' "$TS" "$BODY" | openssl dgst -sha256 -hmac "$SECRET" | sed 's/^.* //')`,
          `curl -sS -X POST '${url}' \\`,
          "  -H 'Content-Type: application/json' \\",
          `  -H "X-Cadre-Signature: t=$TS,v1=$SIG" \\`,
          `  -H "X-Cadre-Delivery: test-$TS" \\`,
        ]
      : [
          `SIG=$(printf '%s' "$BODY" | openssl dgst -sha256 -hmac "$SECRET" | sed 's/^.* //')`,
          `curl -sS -X POST '${url}' \\`,
          "  -H 'Content-Type: application/json' \\",
          `  -H "X-Hub-Signature-256: sha256=$SIG" \\`,
          `  -H "X-GitHub-Delivery: test-$TS" -H "X-GitHub-Event: issues" \\`,
        ];
  const github = [
    "In GitHub: the repository's **Settings → Webhooks → Add webhook**. Payload URL:",
    "",
    fenced(url, ""),
    "Content type: `application/json`. Secret: the secret above. GitHub signs each delivery with `X-Hub-Signature-256` and names it with `X-GitHub-Delivery`; its first one, `ping`, is answered without a run.",
    "",
  ];
  return [
    ...(scheme === "github" ? github : []),
    "Send a signed test delivery (bash, openssl and curl):",
    "",
    fenced(
      [
        `SECRET='${secret}'`,
        `BODY='{"hello":"world"}'`,
        "TS=$(date +%s)",
        ...signing,
        `  --data-binary "$BODY"`,
      ].join("\n"),
      "sh",
    ),
  ].join("\n");
}

const page = (handle: string) => `/subagents/${handle}/webhooks`;

export const createWebhook = defineAction({
  name: "create_webhook",
  needs: ["agent"],
  description: "Create a webhook: a URL and a secret another system signs its deliveries with",
  params: z.object({
    name: text(80).meta({ label: "Name", description: "who calls it, e.g. “GitHub issues”" }),
    signature: signatureParam.default("cadre"),
    instruction: z.string().trim().max(4000, "at most 4000 characters").optional().meta({
      label: "Instruction",
      multiline: true,
      description:
        "what the agent should do with each delivery, e.g. “Triage this issue into a note in general”",
    }),
  }),
  writes: true,
  confirmRecent: true,
  audience: toAgentManagers("webhook"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const id = newId();
    const secret = newSecret();
    const sealed = sealSecret(ctx.tenant.id, id, secret);
    await ctx.tx.agentWebhook.create({
      data: {
        id,
        tenantId: ctx.tenant.id,
        agentId: agent.id,
        name: params.name,
        instruction: params.instruction ?? "",
        encryptedSecret: new Uint8Array(sealed.ciphertext),
        keyVersion: sealed.keyVersion,
        ratePerMinute: DEFAULT_RATE_PER_MINUTE,
        signature: params.signature,
        createdById: ctx.actor.id,
      },
    });
    return {
      status: 201,
      location: page(agent.handle),
      notice: `Created the webhook “${params.name}”: deliveries go to POST /hooks/${id}.`,
      secret,
      secretLabel: "Its signing secret",
      secretHelp: setupHelp(origin(ctx), id, secret, params.signature),
    };
  },
});

const origin = (ctx: Ctx) => ctx.origin ?? "https://<your workspace's address>";

async function ownWebhook(ctx: ActionCtx, agent: AgentScope, id: string) {
  const hook = await ctx.tx.agentWebhook.findFirst({
    where: { id, tenantId: ctx.tenant.id, agentId: agent.id },
  });
  if (!hook) throw new NotFoundError(`No webhook ${id} of @${agent.handle}`);
  return { agent, hook };
}

export const rotateWebhookSecret = defineAction({
  name: "rotate_webhook_secret",
  needs: ["agent"],
  destructive: `Senders must switch to the new secret: the old one keeps working for ${ROTATION_GRACE_HOURS} hours (or stops at once, if you chose so), then deliveries signed with it are refused.`,
  description: `Give it a new secret (the old one works ${ROTATION_GRACE_HOURS} more hours, or stops now)`,
  params: z.object({
    id: webhookId,
    old_secret: z
      .enum(["grace", "now"])
      .default("grace")
      .meta({
        label: "The old secret",
        optionLabels: {
          grace: `works ${ROTATION_GRACE_HOURS} more hours`,
          now: "stops now (it leaked)",
        },
      }),
  }),
  writes: true,
  confirmRecent: true,
  audience: toAgentManagers("webhook"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const { agent, hook } = await ownWebhook(ctx, scope.agent, params.id);
    const secret = newSecret();
    const sealed = sealSecret(ctx.tenant.id, hook.id, secret);
    const now = new Date();
    const until =
      params.old_secret === "grace" ? new Date(now.getTime() + ROTATION_GRACE_HOURS * 3600_000) : null;
    await ctx.tx.agentWebhook.update({
      where: { id: hook.id },
      data: {
        encryptedSecret: new Uint8Array(sealed.ciphertext),
        keyVersion: sealed.keyVersion,
        rotatedAt: now,
        // Only the secret just replaced is kept: rotating twice ends the first one's grace.
        previousSecret: until ? hook.encryptedSecret : null,
        previousKeyVersion: until ? hook.keyVersion : null,
        previousSecretUntil: until,
      },
    });
    return {
      status: 200,
      location: page(agent.handle),
      notice: until
        ? `New secret for “${hook.name}”: the old one is accepted until ${when(until)}, then refused.`
        : `New secret for “${hook.name}”: deliveries signed with the old one are refused from now on.`,
      secret,
      secretLabel: "Its new signing secret",
      secretHelp: setupHelp(origin(ctx), hook.id, secret, hook.signature),
    };
  },
});

export const setWebhookSignature = defineAction({
  name: "set_webhook_signature",
  needs: ["agent"],
  description: "Choose how its sender signs deliveries: Cadre's header or GitHub's",
  params: z.object({ id: webhookId, signature: signatureParam }),
  writes: true,
  audience: toAgentManagers("webhook"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const { agent, hook } = await ownWebhook(ctx, scope.agent, params.id);
    await ctx.tx.agentWebhook.update({ where: { id: hook.id }, data: { signature: params.signature } });
    return {
      status: 200,
      location: page(agent.handle),
      notice: `“${hook.name}” now expects ${SCHEMES[params.signature].title} signature (${SCHEMES[params.signature].header})`,
    };
  },
});

function toggle(enable: boolean) {
  return defineAction({
    name: enable ? "enable_webhook" : "disable_webhook",
    needs: ["agent"],
    description: enable ? "Accept its deliveries again" : "Refuse its deliveries (404) until enabled",
    params: z.object({ id: webhookId }),
    writes: true,
    audience: toAgentManagers("webhook"),
    available: peopleOnly,
    async execute(ctx, params, scope) {
      const { agent, hook } = await ownWebhook(ctx, scope.agent, params.id);
      await ctx.tx.agentWebhook.update({ where: { id: hook.id }, data: { enabled: enable } });
      return {
        status: 200,
        location: page(agent.handle),
        notice: `${enable ? "Enabled" : "Disabled"} “${hook.name}”`,
      };
    },
  });
}

export const enableWebhook = toggle(true);
export const disableWebhook = toggle(false);

export const deleteWebhook = defineAction({
  name: "delete_webhook",
  needs: ["agent"],
  destructive: "Deliveries to its address are refused from now on. This cannot be undone.",
  description: "Delete it: its URL answers 404 from now on (the runs it started stay)",
  params: z.object({ id: webhookId }),
  writes: true,
  audience: toAgentManagers("webhook"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const { agent, hook } = await ownWebhook(ctx, scope.agent, params.id);
    await ctx.tx.agentWebhook.delete({ where: { id: hook.id } });
    return { status: 200, location: page(agent.handle), notice: `Deleted “${hook.name}”` };
  },
});
