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
const graceLine = (h: AgentWebhook) =>
  h.previousSecretUntil && h.previousSecretUntil > new Date()
    ? ` · the old secret is accepted until ${when(h.previousSecretUntil)}`
    : "";

/** One webhook: what it is, where it is called, what it started; its section's id is the webhook's, so `#<id>` lands on it. */
function card(handle: string, origin: string, h: AgentWebhook, runs: SubagentTaskRun[]): Block {
  const md = [
    `### ${mdEscape(h.name)} · ${h.enabled ? "enabled" : "**disabled** (deliveries answer 404)"} {#${h.id}}`,
    "",
    `${code(`POST ${origin}/hooks/${h.id}`)}  `,
    `id ${code(h.id)} · signed ${SCHEMES[h.signature].title} way (${code(SCHEMES[h.signature].header)}) · created ${when(h.createdAt)}${h.rotatedAt ? ` · secret rotated ${when(h.rotatedAt)}` : ""}${graceLine(h)} · last delivery ${h.lastDeliveryAt ? when(h.lastDeliveryAt) : "never"} · at most ${h.ratePerMinute} deliveries a minute`,
    "",
    h.instruction
      ? `Instruction:\n\n${quote(h.instruction)}`
      : "_No instruction: the agent reads each payload and decides._",
    "",
    `Recent runs it started:${runs.length ? `\n\n${runs.map((r) => runLine(handle, r)).join("\n")}` : " _none yet._"}`,
  ].join("\n");
  return { md };
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
    const a = scope.agent;
    const hooks = await ctx.db.agentWebhook.findMany({
      where: { tenantId: ctx.tenant.id, agentId: a.id },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    });
    const runs = hooks.length
      ? await ctx.db.subagentTaskRun.findMany({
          where: {
            tenantId: ctx.tenant.id,
            agentId: a.id,
            triggerKind: "webhook",
            triggerRef: { in: hooks.map((h) => h.id) },
          },
          orderBy: [{ createdAt: "desc" }, { id: "desc" }],
          take: RECENT_RUNS * hooks.length,
        })
      : [];
    const origin = ctx.origin ?? "";
    const perHook = hooks.flatMap((h): Block[] => {
      const fixed = { webhook_id: h.id };
      return [
        card(a.handle, origin, h, runs.filter((r) => r.triggerRef === h.id).slice(0, RECENT_RUNS)),
        ...(h.enabled
          ? [{ form: { action: "send_test_delivery", fixed, label: "Send a test delivery" } } as Block]
          : []),
        {
          form: {
            action: "set_webhook_signature",
            fixed,
            label: "Change signature",
            fields: ["signature"],
            values: { signature: h.signature },
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
            action: h.enabled ? "disable_webhook" : "enable_webhook",
            fixed,
            label: h.enabled ? "Disable" : "Enable",
          },
        },
        { form: { action: "delete_webhook", fixed, label: "Delete" } },
      ];
    });
    return {
      title: `Webhooks of ${a.name}`,
      breadcrumb: [...agentCrumbs(a), { label: "Webhooks" }],
      blocks: [
        {
          md: [
            `Another system (GitHub, a CI job, a form) POSTs a JSON or text body to a webhook's URL and ${mdEscape(a.name)} starts a run: your instruction, then the body quoted as data (the first ${TASK_PAYLOAD_CHARS} characters), never as instructions. The answer is 202 with the run's address.`,
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
