// A workspace admin sets or removes the workspace's OpenID Connect provider (/settings/sso).
// Saving discovers the issuer first, outside any transaction (a provider may take seconds), so
// a URL that is no OpenID Provider is a 400 on its field and nothing is written; the row and
// its event then commit together. The client secret is write-only: sealed, never shown again.
import { z } from "zod";
import { ForbiddenError, ValidationError } from "../../lib/errors.ts";
import { parseDomains } from "../accounts/join-link.ts";
import { discoverProvider, issuerProblem } from "../accounts/sso-client.ts";
import { providerSettingsOf, removeProvider, saveProvider } from "../accounts/sso-settings.ts";
import { emit } from "../events.ts";
import { toWorkspace } from "../registry/audiences.ts";
import { type ActionCtx, type Ctx, defineAction } from "../registry/types.ts";

export const SSO_PATH = "/settings/sso";
export const SSO_SET = "workspace.sso_set";
export const SSO_REMOVED = "workspace.sso_removed";

const adminsOnly = (ctx: Ctx) =>
  ctx.actor.tenantAdmin ? null : "only workspace admins change how people sign in to the workspace";

const line = (max: number) => z.string().trim().min(1, "required").max(max, `at most ${max} characters`);

/** The provider's answer when discovery failed, never quoted: it may echo what was sent. */
async function checkDiscovery(settings: { issuer: string; clientId: string; clientSecret: string }) {
  try {
    await discoverProvider(settings);
  } catch {
    throw new ValidationError(
      [
        {
          field: "issuer",
          label: "Issuer URL",
          message:
            "no OpenID Provider answered there: check the URL (its /.well-known/openid-configuration must be reachable from this server and name this issuer)",
        },
      ],
      "Please fix",
    );
  }
}

export const setSsoProvider = defineAction({
  name: "set_sso_provider",
  description: "Set the workspace's single sign-on (an OpenID Connect provider): people sign in with it",
  params: z.object({
    display_name: line(60).meta({
      label: "Display name",
      description: "shown on the log-in page as “Sign in with <name>”, e.g. Acme SSO",
    }),
    issuer: line(500).meta({
      label: "Issuer URL",
      description: "the provider's issuer, e.g. https://login.example.com/realms/acme (https only)",
    }),
    client_id: line(300).meta({ label: "Client ID", description: "the client registered for Cadre" }),
    client_secret: z.string().trim().max(1000, "at most 1000 characters").optional().meta({
      label: "Client secret",
      secret: true,
      description: "stored encrypted and never shown again; leave empty to keep the one saved",
    }),
    allowed_domains: z.string().max(2000, "at most 2000 characters").optional().meta({
      label: "Allowed email domains",
      description:
        "people with a verified address at these domains join as members on their first sign-in, e.g. example.com; others need an invitation",
    }),
    sso_only: z.boolean().optional().meta({
      label: "SSO only",
      description: "refuse passwords at log-in and password reset: everyone signs in with the provider",
    }),
  }),
  writes: true,
  confirmRecent: true,
  audience: toWorkspace("single sign-on settings"),
  callsOut: true,
  available: adminsOnly,
  async execute(ctx, params) {
    const problem = issuerProblem(params.issuer);
    if (problem)
      throw new ValidationError([{ field: "issuer", label: "Issuer URL", message: problem }], "Please fix");
    const allowedDomains = parseDomains(params.allowed_domains ?? "");
    const saved = params.client_secret ? null : await providerSettingsOf(ctx.db, ctx.tenant.id);
    const clientSecret = params.client_secret || saved?.clientSecret;
    if (!clientSecret)
      throw new ValidationError(
        [{ field: "client_secret", label: "Client secret", message: "needed the first time" }],
        "Please fix",
      );
    const ssoOnly = params.sso_only ?? false;
    if (
      ssoOnly &&
      !(await ctx.db.userIdentity.count({ where: { tenantId: ctx.tenant.id, userId: ctx.actor.id } }))
    )
      throw new ForbiddenError(
        "Sign in with the provider yourself once before turning on SSO only: otherwise a mistake in these settings locks every admin out.",
      );
    await checkDiscovery({ issuer: params.issuer, clientId: params.client_id, clientSecret });
    await ctx.db.$transaction(async (tx) => {
      const id = await saveProvider(tx, ctx.tenant.id, {
        displayName: params.display_name,
        issuer: params.issuer,
        clientId: params.client_id,
        clientSecret: params.client_secret ?? "",
        allowedDomains,
        ssoOnly,
      });
      const payload = { issuer: params.issuer, sso_only: ssoOnly, allowed_domains: allowedDomains };
      await emit({ ...ctx, tx } as ActionCtx, {
        type: SSO_SET,
        subjectType: "sso_provider",
        subjectId: id,
        payload,
      });
    });
    return {
      status: 200,
      location: SSO_PATH,
      notice: `Saved: the log-in page offers “Sign in with ${params.display_name}”${ssoOnly ? ", and passwords are turned off" : ""}.`,
    };
  },
});

export const removeSsoProvider = defineAction({
  name: "remove_sso_provider",
  description: "Remove the workspace's single sign-on: people sign in with passwords again",
  params: z.object({}),
  writes: true,
  confirmRecent: true,
  audience: toWorkspace("single sign-on settings"),
  available: adminsOnly,
  destructive:
    "“Sign in with …” leaves the log-in page and SSO only is turned off: people without a password set one with “Forgot your password?”.",
  async execute(ctx) {
    const removed = await removeProvider(ctx.tx, ctx.tenant.id);
    if (!removed) return { status: 200, location: SSO_PATH, notice: "No single sign-on was set." };
    await emit(ctx, {
      type: SSO_REMOVED,
      subjectType: "sso_provider",
      subjectId: removed.id,
      payload: { issuer: removed.issuer },
    });
    return {
      status: 200,
      location: SSO_PATH,
      notice: `${removed.displayName} no longer signs people in here.`,
    };
  },
});
