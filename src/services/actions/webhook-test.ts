// "Send a test delivery": the owner checks a webhook end to end without its sender. The
// body is signed exactly as the webhook's scheme says a sender signs it, and passes the
// same checks (checkDelivery) and the same queueing (deliver) as a delivery over HTTP, so a
// test that starts a run proves the path another system's delivery takes.
import { z } from "zod";
import { ConflictError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { signedHeaders } from "../agents/automations/webhook-signatures.ts";
import { checkDelivery, deliver, findWebhook, openSecret } from "../agents/automations/webhooks.ts";
import { tenantSettings } from "../agents/core/settings.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { webhookId } from "./webhooks.ts";

export const sendTestDelivery = defineAction({
  name: "send_test_delivery",
  needs: ["agent"],
  description: "Send it a signed test delivery: a run starts as it would for its sender",
  params: z.object({ id: webhookId }),
  writes: true,
  audience: toAgentManagers("webhook"),
  // Queued through the triggers' own transactions, as a delivery over HTTP is.
  callsOut: true,
  available: (ctx) => (ctx.actor.kind === "person" ? null : "only people manage webhooks"),
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const hook = await findWebhook(ctx.db, ctx.tenant.id, params.id);
    if (!hook || hook.agentId !== agent.id)
      throw new ConflictError(
        "This webhook takes no deliveries now (disabled, deleted, or its agent archived).",
      );
    if (!tenantSettings(ctx.tenant).agents_enabled)
      throw new ConflictError("Agents are switched off in this workspace: a delivery would start nothing.");
    const body = Buffer.from(
      JSON.stringify({
        test: true,
        webhook: hook.name,
        sent_by: `@${ctx.actor.handle}`,
        at: new Date().toISOString(),
      }),
    );
    const headers = signedHeaders(hook.signature, openSecret(hook), body, `test-${newId()}`);
    const checked = checkDelivery(hook, "json", headers, body);
    if ("refused" in checked)
      throw new ConflictError(`The test delivery was refused: ${checked.refused.message}`);
    const out = await deliver(ctx.db, hook, checked.delivery);
    if ("retryAfterSeconds" in out)
      throw new ConflictError(
        `More than ${hook.ratePerMinute} deliveries a minute to this webhook: try again in ${out.retryAfterSeconds} s.`,
      );
    return {
      status: 201,
      location: `/subagents/${agent.handle}/runs/${out.run.id}`,
      notice: `Test delivery to “${hook.name}”, signed ${hook.signature === "github" ? "GitHub's" : "Cadre's"} way, accepted: this is the run it started (${out.run.status}).`,
    };
  },
});
