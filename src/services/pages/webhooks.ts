import type { AgentWebhook, SubagentTaskRun } from "../../generated/prisma/client.ts";
import { ROTATION_GRACE_HOURS } from "../actions/webhooks.ts";
import { SCHEMES, SIGNATURE_TOLERANCE_SECONDS } from "../agents/automations/webhook-signatures.ts";
import { TASK_PAYLOAD_CHARS } from "../agents/automations/webhooks.ts";
import { loadAgent } from "../agents/core/ownership.ts";
import { code, mdEscape, quote } from "../registry/markdown.ts";
import { type Block, definePage } from "../registry/types.ts";
import { agentCrumbs, when } from "./format.ts";
import { runLine } from "./runs.ts";

const RECENT_RUNS = 5;

/** While a rotation's grace lasts, the old secret still signs: the owner sees until when. */
const graceLine = (webhook: AgentWebhook) =>
  webhook.previousSecretUntil && webhook.previousSecretUntil > new Date()
    ? ` · the old secret is accepted until ${when(webhook.previousSecretUntil)}`
    : "";

/** One webhook: what it is, where it is called, what it started; its section's id is the webhook's, so `#<id>` lands on it. */
function card(handle: string, origin: string, webhook: AgentWebhook, runs: SubagentTaskRun[]): Block {
  const markdown = [
    `### ${mdEscape(webhook.name)} · ${webhook.enabled ? "enabled" : "**disabled** (deliveries answer 404)"} {#${webhook.id}}`,
    "",
    `${code(`POST ${origin}/hooks/${webhook.id}`)}  `,
    `id ${code(webhook.id)} · signed ${SCHEMES[webhook.signature].title} way (${code(SCHEMES[webhook.signature].header)}) · created ${when(webhook.createdAt)}${webhook.rotatedAt ? ` · secret rotated ${when(webhook.rotatedAt)}` : ""}${graceLine(webhook)} · last delivery ${webhook.lastDeliveryAt ? when(webhook.lastDeliveryAt) : "never"} · at most ${webhook.ratePerMinute} deliveries a minute`,
    "",
    webhook.instruction
      ? `Instruction:\n\n${quote(webhook.instruction)}`
      : "_No instruction: the agent reads each payload and decides._",
    "",
    `Recent runs it started:${runs.length ? `\n\n${runs.map((r) => runLine(handle, r)).join("\n")}` : " _none yet._"}`,
  ].join("\n");
  return { md: markdown };
}

export const webhooksPage = definePage({
  pattern: "/subagents/:handle/webhooks",
  actions: [
    "create_webhook",
    "send_test_delivery",
    "set_webhook_signature",
    "rotate_webhook_secret",
    "disable_webhook",
    "enable_webhook",
    "delete_webhook",
  ],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  async render(ctx, scope) {
    const agent = scope.agent;
    const hooks = await ctx.db.agentWebhook.findMany({
      where: { tenantId: ctx.tenant.id, agentId: agent.id },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    });
    const runs = hooks.length
      ? await ctx.db.subagentTaskRun.findMany({
          where: {
            tenantId: ctx.tenant.id,
            agentId: agent.id,
            triggerKind: "webhook",
            triggerRef: { in: hooks.map((h) => h.id) },
          },
          orderBy: [{ createdAt: "desc" }, { id: "desc" }],
          take: RECENT_RUNS * hooks.length,
        })
      : [];
    const origin = ctx.origin ?? "";
    const perHook = hooks.flatMap((webhook): Block[] => {
      const fixed = { id: webhook.id };
      return [
        card(
          agent.handle,
          origin,
          webhook,
          runs.filter((r) => r.triggerRef === webhook.id).slice(0, RECENT_RUNS),
        ),
        ...(webhook.enabled
          ? [{ form: { action: "send_test_delivery", fixed, label: "Send a test delivery" } } as Block]
          : []),
        {
          form: {
            action: "set_webhook_signature",
            fixed,
            label: "Change signature",
            fields: ["signature"],
            values: { signature: webhook.signature },
          },
        },
        {
          form: {
            action: "rotate_webhook_secret",
            fixed,
            label: "Rotate secret",
            fields: ["old_secret"],
          },
        },
        {
          form: {
            action: webhook.enabled ? "disable_webhook" : "enable_webhook",
            fixed,
            label: webhook.enabled ? "Disable" : "Enable",
          },
        },
        { form: { action: "delete_webhook", fixed, label: "Delete" } },
      ];
    });
    return {
      title: `Webhooks of ${agent.name}`,
      breadcrumb: [...agentCrumbs(agent), { label: "Webhooks" }],
      blocks: [
        {
          md: [
            `Another system (GitHub, a CI job, a form) POSTs a JSON or text body to a webhook's URL and ${mdEscape(agent.name)} starts a run: your instruction, then the body quoted as data (the first ${TASK_PAYLOAD_CHARS} characters), never as instructions. The answer is 202 with the run's address.`,
            "",
            `Each delivery is signed with the webhook's secret (shown once, when you create or rotate it), the way you choose per webhook:`,
            "",
            `- **Cadre's**: ${code(`${SCHEMES.cadre.header}: ${SCHEMES.cadre.shape}`)}. A timestamp more than ${SIGNATURE_TOLERANCE_SECONDS / 60} minutes off is refused; ${code(`${SCHEMES.cadre.delivery}: <id>`)} names the delivery.`,
            `- **GitHub's**: ${code(`${SCHEMES.github.header}: ${SCHEMES.github.shape}`)}, with ${code(SCHEMES.github.delivery)} as the delivery id; set the webhook's content type to ${code("application/json")} in GitHub.`,
            "",
            `Without a delivery id, the body's SHA-256 is one: a redelivery returns the same run. Bodies up to 64 KB. Rotating keeps the old secret working ${ROTATION_GRACE_HOURS} hours while you update the sender, unless you say it leaked.`,
          ].join("\n"),
        },
        ...(perHook.length ? perHook : [{ md: "_No webhooks yet: create one with the form._" }]),
      ],
    };
  },
});
