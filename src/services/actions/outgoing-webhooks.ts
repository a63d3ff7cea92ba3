// Outgoing webhooks: endpoints that hear of agents' events (services/reach/). A person keeps
// their own (the events of agents they manage); a studio's admins keep the studio's (the
// events of its agents). The signing secret is shown once, when made.
import { z } from "zod";
import { ConflictError, NotFoundError, ValidationError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { emit } from "../events.ts";
import { checkBaseUrl } from "../money/keys.ts";
import {
  confirmEndpoint,
  ENDPOINT_TEST,
  endpointPath,
  newEndpointSecret,
  sealEndpointSecret,
} from "../reach/endpoints.ts";
import { HOOK_EVENTS } from "../reach/news.ts";
import { toSelf } from "../registry/audiences.ts";
import { type ActionCtx, type Ctx, defineAction } from "../registry/types.ts";
import { handleSchema, idSchema, text } from "../validation.ts";
import { peopleOnly } from "./notification-settings.ts";

export const webhooksPath = (handle: string) => `/u/${handle}/settings/webhooks`;

export const EVENT_LABELS: Record<(typeof HOOK_EVENTS)[number], string> = {
  "approval.requested": "An action waits for approval",
  "approval.decided": "An approval was decided",
  "question.asked": "An agent asks a question",
  "run.finished": "A run finished or was stopped",
  "run.failed": "A run failed or timed out",
  "cost.alert": "A cost alert, or an agent paused at its limit",
};

/** A form field per event: `approval_requested` for `approval.requested` (a dot in a field name nests it). */
export const eventFlag = (event: string) => event.replace(".", "_");

const eventFlags = Object.fromEntries(
  HOOK_EVENTS.map((event) => [
    eventFlag(event),
    z.boolean().optional().meta({ label: EVENT_LABELS[event], description: event, group: "Events" }),
  ]),
) as Record<string, z.ZodOptional<z.ZodBoolean>>;

/** Endpoints the actor keeps: their own, and those of studios they admin. */
export const keptBy = (actorId: string) => ({
  OR: [
    { studioId: null, ownerId: actorId },
    { studio: { members: { some: { userId: actorId, role: "admin" as const } } } },
  ],
});

async function keptEndpoint(ctx: ActionCtx, id: string) {
  const endpoint = await ctx.tx.outboundEndpoint.findFirst({
    where: { id, tenantId: ctx.tenant.id, ...keptBy(ctx.actor.id) },
  });
  if (!endpoint) throw new NotFoundError(`No outgoing webhook #${id}`);
  return endpoint;
}

const endpointId = idSchema.meta({
  label: "Webhook",
  description: "which outgoing webhook",
  pickedBeside: true,
});

export const createOutgoingWebhook = defineAction({
  name: "create_outgoing_webhook",
  description:
    "Send agents' events (approvals, questions, runs, cost alerts) to a URL: a chat tool's incoming webhook, or your own service",
  params: z.object({
    name: text(80).meta({ label: "Name", description: "e.g. “#agents in Slack”" }),
    url: text(2000).meta({ label: "URL", description: "where each event is POSTed" }),
    format: z
      .enum(["json", "slack"])
      .default("json")
      .meta({
        label: "Format",
        optionLabels: { json: "Cadre's JSON (signed)", slack: "Slack-compatible: {text, blocks}" },
      }),
    studio: handleSchema.optional().meta({
      label: "For",
      description: "empty: your agents; a studio you admin: that studio's agents, kept by its admins",
    }),
    ...eventFlags,
  }),
  writes: true,
  confirmRecent: true,
  audience: toSelf("outgoing webhook"),
  available: peopleOnly,
  async execute(ctx, params) {
    const bad = checkBaseUrl(params.url);
    if (bad)
      throw new ValidationError([
        {
          field: "url",
          label: "URL",
          message: bad.replace("https://llm.example.com/v1", "https://hooks.example.com/cadre"),
        },
      ]);
    const events = HOOK_EVENTS.filter((e) => (params as Record<string, unknown>)[eventFlag(e)]);
    if (!events.length)
      throw new ValidationError([{ field: "events", label: "Events", message: "tick at least one event" }]);
    const studio = params.studio
      ? await ctx.tx.studio.findFirst({
          where: {
            tenantId: ctx.tenant.id,
            handle: params.studio,
            members: { some: { userId: ctx.actor.id, role: "admin" } },
          },
        })
      : null;
    if (params.studio && !studio)
      throw new ValidationError([
        { field: "studio", label: "For", message: `you are not an admin of a studio “${params.studio}”` },
      ]);
    const id = newId();
    const secret = newEndpointSecret();
    const sealed = sealEndpointSecret(ctx.tenant.id, id, secret);
    await ctx.tx.outboundEndpoint.create({
      data: {
        id,
        tenantId: ctx.tenant.id,
        ownerId: ctx.actor.id,
        studioId: studio?.id ?? null,
        name: params.name,
        url: params.url,
        events,
        format: params.format,
        encryptedSecret: new Uint8Array(sealed.ciphertext),
        keyVersion: sealed.keyVersion,
      },
    });
    return {
      status: 201,
      location: endpointPath(ctx.actor.handle, id),
      notice: `Created the outgoing webhook “${params.name}”${studio ? ` for ${studio.name}` : ""}`,
      secret,
      secretLabel: "Its signing secret",
      secretHelp:
        'Each delivery carries `X-Cadre-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with this secret>` and `X-Cadre-Delivery: <id>`. Check it, and refuse a `t` more than 5 minutes old.',
    };
  },
});

function switchAction(name: string, enabled: boolean) {
  return defineAction({
    name,
    description: enabled
      ? "Turn an outgoing webhook on again (its failure count starts over)"
      : "Turn an outgoing webhook off: nothing is sent until it is on again",
    params: z.object({ id: endpointId }),
    writes: true,
    audience: toSelf("outgoing webhook"),
    available: peopleOnly,
    async execute(ctx, params) {
      const endpoint = await keptEndpoint(ctx, params.id);
      await ctx.tx.outboundEndpoint.update({
        where: { id: endpoint.id },
        data: enabled
          ? { enabled: true, failures: 0, disabledReason: null }
          : { enabled: false, disabledReason: `turned off by @${ctx.actor.handle}` },
      });
      return {
        status: 200,
        location: endpointPath(ctx.actor.handle, endpoint.id),
        notice: `“${endpoint.name}” is ${enabled ? "on" : "off"}`,
      };
    },
  });
}
export const enableOutgoingWebhook = switchAction("enable_outgoing_webhook", true);
export const disableOutgoingWebhook = switchAction("disable_outgoing_webhook", false);

export const deleteOutgoingWebhook = defineAction({
  name: "delete_outgoing_webhook",
  destructive: "Nothing more is sent to it, and its delivery log is deleted.",
  description: "Delete an outgoing webhook",
  params: z.object({ id: endpointId }),
  writes: true,
  audience: toSelf("outgoing webhook"),
  available: peopleOnly,
  async execute(ctx, params) {
    const endpoint = await keptEndpoint(ctx, params.id);
    await ctx.tx.outboundEndpoint.delete({ where: { id: endpoint.id } });
    return { status: 200, location: webhooksPath(ctx.actor.handle), notice: `Deleted “${endpoint.name}”` };
  },
});

export const testOutgoingWebhook = defineAction({
  name: "test_outgoing_webhook",
  description: "Send a signed test event (`ping`) to an outgoing webhook, through the same queue and retries",
  params: z.object({ id: endpointId }),
  writes: true,
  audience: toSelf("outgoing webhook"),
  available: peopleOnly,
  async execute(ctx, params) {
    const endpoint = await keptEndpoint(ctx, params.id);
    // Through the outbox, as every delivery: the worker writes and sends it.
    await emit(ctx, { type: ENDPOINT_TEST, subjectType: "endpoint", subjectId: endpoint.id });
    return {
      status: 200,
      location: endpointPath(ctx.actor.handle, endpoint.id),
      notice: "A test event is on its way: its delivery shows below in a moment",
    };
  },
});

export const confirmOutgoingWebhook = defineAction({
  name: "confirm_outgoing_webhook",
  destructive:
    "Deliveries start again to this URL, which someone who left the studio set up, the ones that waited first; from now on it is yours to answer for.",
  description:
    "Confirm a studio's paused outgoing webhook, whose creator left the studio: keep sending to its URL, and become its owner",
  params: z.object({ id: endpointId }),
  writes: true,
  audience: toSelf("outgoing webhook"),
  available: peopleOnly,
  async execute(ctx, params) {
    const endpoint = await keptEndpoint(ctx, params.id);
    if (!endpoint.pausedAt)
      throw new ConflictError(`“${endpoint.name}” is not paused: there is nothing to confirm`);
    const waiting = await confirmEndpoint(ctx.tx, endpoint.id, ctx.actor.id);
    return {
      status: 200,
      location: endpointPath(ctx.actor.handle, endpoint.id),
      notice: `“${endpoint.name}” sends again, now as yours${waiting ? `: ${waiting} waiting ${waiting === 1 ? "delivery goes" : "deliveries go"} out in a moment` : ""}`,
    };
  },
});

export const keptEndpointFilter = (ctx: Ctx) => ({ tenantId: ctx.tenant.id, ...keptBy(ctx.actor.id) });
