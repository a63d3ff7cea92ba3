import type { AgentWebhook, SubagentTaskRun } from "../../generated/prisma/client.ts";
import { SIGNATURE_TOLERANCE_SECONDS, TASK_PAYLOAD_CHARS } from "../agents/automations/webhooks.ts";
import { loadAgent } from "../agents/core/ownership.ts";
import { code, mdEscape, quote } from "../registry/markdown.ts";
import type { Block, PageDef } from "../registry/types.ts";
import { agentCrumbs, when } from "./format.ts";
import { runLine } from "./runs.ts";

const RECENT_RUNS = 5;

/** One webhook: what it is, where it is called, what it started; its section's id is the webhook's, so `#<id>` lands on it. */
function card(handle: string, origin: string, h: AgentWebhook, runs: SubagentTaskRun[]): Block {
  const md = [
    `### ${mdEscape(h.name)} · ${h.enabled ? "enabled" : "**disabled** (deliveries answer 404)"} {#${h.id}}`,
    "",
    `${code(`POST ${origin}/hooks/${h.id}`)}  `,
    `id ${code(h.id)} · created ${when(h.createdAt)}${h.rotatedAt ? ` · secret rotated ${when(h.rotatedAt)}` : ""} · last delivery ${h.lastDeliveryAt ? when(h.lastDeliveryAt) : "never"} · at most ${h.ratePerMinute} deliveries a minute`,
    "",
    h.instruction
      ? `Instruction:\n\n${quote(h.instruction)}`
      : "_No instruction: the agent reads each payload and decides._",
    "",
    `Recent runs it started:${runs.length ? `\n\n${runs.map((r) => runLine(handle, r)).join("\n")}` : " _none yet._"}`,
  ].join("\n");
  return { md };
}

export const webhooksPage: PageDef = {
  pattern: "/subagents/:handle/webhooks",
  actions: ["create_webhook", "rotate_webhook_secret", "disable_webhook", "enable_webhook", "delete_webhook"],
  resolve: async (ctx, p) => ({ agent: await loadAgent(ctx, p.handle!) }),
  async render(ctx, scope) {
    const a = scope.agent!;
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
        { form: { action: "rotate_webhook_secret", fixed, label: "Rotate secret" } },
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
            `Each delivery is signed with the webhook's secret, shown once when you create or rotate it: header ${code("X-Cadre-Signature: t=<unix seconds>,v1=<hex>")}, where v1 is the HMAC-SHA256 of ${code("<t>.<raw body>")}. A timestamp more than ${SIGNATURE_TOLERANCE_SECONDS / 60} minutes off is refused; ${code("X-Cadre-Delivery: <id>")} (else the body's SHA-256) makes a redelivery return the same run. Bodies up to 64 KB.`,
          ].join("\n"),
        },
        ...(perHook.length ? perHook : [{ md: "_No webhooks yet: create one with the form._" }]),
      ],
    };
  },
};
