// An agent's inbound webhooks, managed by its owner: create one (its secret shown once),
// rotate the secret, disable, enable, delete. Agents never manage webhooks
// (capabilities.ts); the page resolves only for the agent's owner (loadAgent).
import { z } from "zod";
import { NotFoundError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { requireScope } from "../access.ts";
import { DEFAULT_RATE_PER_MINUTE, newSecret, sealSecret } from "../agents/automations/webhooks.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { fenced } from "../registry/markdown.ts";
import { type ActionCtx, type Ctx, defineAction, type Scope } from "../registry/types.ts";
import { idSchema, text } from "../validation.ts";

const peopleOnly = (ctx: Ctx) => (ctx.actor.kind === "person" ? null : "only people manage webhooks");

const webhookId = idSchema.meta({
  label: "Webhook",
  description: "which webhook (the buttons beside each pick it)",
  pickedBeside: true,
});

/** A copy-paste signed delivery: the secret goes in it the one time it is shown. */
export function curlExample(origin: string, id: string, secret: string): string {
  return [
    "Send a signed test delivery (bash, openssl and curl):",
    "",
    fenced(
      [
        `SECRET='${secret}'`,
        `BODY='{"hello":"world"}'`,
        "TS=$(date +%s)",
        `SIG=$(printf '%s.%s' "$TS" "$BODY" | openssl dgst -sha256 -hmac "$SECRET" | sed 's/^.* //')`,
        `curl -sS -X POST '${origin}/hooks/${id}' \\`,
        "  -H 'Content-Type: application/json' \\",
        `  -H "X-Cadre-Signature: t=$TS,v1=$SIG" \\`,
        `  -H "X-Cadre-Delivery: test-$TS" \\`,
        `  --data-binary "$BODY"`,
      ].join("\n"),
      "sh",
    ),
  ].join("\n");
}

const page = (handle: string) => `/subagents/${handle}/webhooks`;

export const createWebhook = defineAction({
  name: "create_webhook",
  description: "Create a webhook: a URL and a secret another system signs its deliveries with",
  params: z.object({
    name: text(80).meta({ label: "Name", description: "who calls it, e.g. “GitHub issues”" }),
    instruction: z.string().trim().max(4000, "at most 4000 characters").optional().meta({
      label: "Instruction",
      multiline: true,
      description:
        "what the agent should do with each delivery, e.g. “Triage this issue into a note in general”",
    }),
  }),
  writes: true,
  audience: toAgentManagers("webhook"),
  available: peopleOnly,
  async execute(ctx, p, scope) {
    const agent = requireScope(scope.agent, "agent");
    const id = newId();
    const secret = newSecret();
    const sealed = sealSecret(ctx.tenant.id, id, secret);
    await ctx.tx.agentWebhook.create({
      data: {
        id,
        tenantId: ctx.tenant.id,
        agentId: agent.id,
        name: p.name,
        instruction: p.instruction ?? "",
        encryptedSecret: new Uint8Array(sealed.ciphertext),
        keyVersion: sealed.keyVersion,
        ratePerMinute: DEFAULT_RATE_PER_MINUTE,
        createdById: ctx.actor.id,
      },
    });
    return {
      status: 201,
      location: page(agent.handle),
      notice: `Created the webhook “${p.name}”: deliveries go to POST /hooks/${id}.`,
      secret,
      secretLabel: "Its signing secret",
      secretHelp: curlExample(ctx.origin ?? "https://<your workspace's address>", id, secret),
    };
  },
});

async function ownWebhook(ctx: ActionCtx, scope: Scope, id: string) {
  const agent = requireScope(scope.agent, "agent");
  const hook = await ctx.tx.agentWebhook.findFirst({
    where: { id, tenantId: ctx.tenant.id, agentId: agent.id },
  });
  if (!hook) throw new NotFoundError(`No webhook ${id} of @${agent.handle}`);
  return { agent, hook };
}

export const rotateWebhookSecret = defineAction({
  name: "rotate_webhook_secret",
  description: "Give it a new secret: the old one stops working at once",
  params: z.object({ webhook_id: webhookId }),
  writes: true,
  audience: toAgentManagers("webhook"),
  available: peopleOnly,
  async execute(ctx, p, scope) {
    const { agent, hook } = await ownWebhook(ctx, scope, p.webhook_id);
    const secret = newSecret();
    const sealed = sealSecret(ctx.tenant.id, hook.id, secret);
    await ctx.tx.agentWebhook.update({
      where: { id: hook.id },
      data: {
        encryptedSecret: new Uint8Array(sealed.ciphertext),
        keyVersion: sealed.keyVersion,
        rotatedAt: new Date(),
      },
    });
    return {
      status: 200,
      location: page(agent.handle),
      notice: `New secret for “${hook.name}”: deliveries signed with the old one are refused from now on.`,
      secret,
      secretLabel: "Its new signing secret",
      secretHelp: curlExample(ctx.origin ?? "https://<your workspace's address>", hook.id, secret),
    };
  },
});

function toggle(enable: boolean) {
  return defineAction({
    name: enable ? "enable_webhook" : "disable_webhook",
    description: enable ? "Accept its deliveries again" : "Refuse its deliveries (404) until enabled",
    params: z.object({ webhook_id: webhookId }),
    writes: true,
    audience: toAgentManagers("webhook"),
    available: peopleOnly,
    async execute(ctx, p, scope) {
      const { agent, hook } = await ownWebhook(ctx, scope, p.webhook_id);
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
  destructive: "Deliveries to its address are refused from now on. This cannot be undone.",
  description: "Delete it: its URL answers 404 from now on (the runs it started stay)",
  params: z.object({ webhook_id: webhookId }),
  writes: true,
  audience: toAgentManagers("webhook"),
  available: peopleOnly,
  async execute(ctx, p, scope) {
    const { agent, hook } = await ownWebhook(ctx, scope, p.webhook_id);
    await ctx.tx.agentWebhook.delete({ where: { id: hook.id } });
    return { status: 200, location: page(agent.handle), notice: `Deleted “${hook.name}”` };
  },
});
