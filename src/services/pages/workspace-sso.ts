// /settings/sso: the workspace's single sign-on with an OpenID Connect provider. Admins set it
// (the form starts from what is saved, except the secret, which is never shown again) and read
// the redirect URI to register; everyone else reads whether it is on. The provider's people
// linked so far are counted, not listed: the people page lists people.
import { redirectUriFor, ssoProviderOf } from "../accounts/sso-settings.ts";
import { SSO_PATH } from "../actions/workspace-sso.ts";
import { code } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage } from "../registry/types.ts";
import { home, when } from "./format.ts";

interface SsoData {
  admin: boolean;
  redirectUri: string;
  provider: Awaited<ReturnType<typeof ssoProviderOf>>;
  linkedCount: number;
}

async function loadSso(ctx: Ctx): Promise<SsoData> {
  const [provider, linkedCount] = await Promise.all([
    ssoProviderOf(ctx.db, ctx.tenant.id),
    ctx.db.userIdentity.count({ where: { tenantId: ctx.tenant.id } }),
  ]);
  return {
    admin: ctx.actor.tenantAdmin,
    redirectUri: redirectUriFor(ctx.origin ?? "https://<your workspace's address>"),
    provider,
    linkedCount,
  };
}

function statusBlock(data: SsoData): Block {
  const provider = data.provider;
  if (!provider) return { md: "_Not set up: people sign in with their password._" };
  const domains = provider.allowedDomains.length
    ? provider.allowedDomains.map(code).join(", ")
    : "_none: only people already here or invited_";
  return {
    md: [
      `- Log-in page: “Sign in with ${provider.displayName}”`,
      `- Issuer: ${code(provider.issuer)}`,
      `- Client ID: ${code(provider.clientId)} · client secret saved (never shown again)`,
      `- Joins by domain: ${domains}`,
      `- SSO only: ${provider.ssoOnly ? "yes — passwords are refused at log-in and password reset" : "no — passwords work too"}`,
      `- People signed in with it so far: ${data.linkedCount}`,
      `- Last changed ${when(provider.updatedAt)}`,
    ].join("\n"),
  };
}

function adminBlocks(data: SsoData): Block[] {
  const provider = data.provider;
  return [
    {
      md: `## Settings\n\nRegister this redirect URI with the provider (a confidential client, authorization code with PKCE, \`client_secret_basic\`): ${code(data.redirectUri)}. One provider per workspace; saving checks that the issuer answers as an OpenID Provider. Turn on SSO only after signing in with it yourself once.`,
    },
    {
      form: {
        action: "set_sso_provider",
        fixed: {},
        label: provider ? "Save single sign-on" : "Set up single sign-on",
        style: "block",
        values: provider
          ? {
              display_name: provider.displayName,
              issuer: provider.issuer,
              client_id: provider.clientId,
              allowed_domains: provider.allowedDomains.join(", "),
              sso_only: provider.ssoOnly,
            }
          : {},
      },
    },
    ...(provider
      ? [{ form: { action: "remove_sso_provider", fixed: {}, label: "Remove single sign-on" } } as Block]
      : []),
  ];
}

/** Pure: the page's blocks from what loadSso read. */
export function ssoView(data: SsoData): Block[] {
  return [
    {
      md: "People sign in with the workspace's identity provider (OpenID Connect): those already here are matched by their verified address, invited addresses accept their invitation, and addresses at the allowed domains join as members. Signing out of Cadre ends the Cadre session; the provider's own session is its own.",
    },
    { md: "## Status" },
    statusBlock(data),
    ...(data.admin ? adminBlocks(data) : [{ md: "_Only workspace admins change single sign-on._" }]),
  ];
}

export const workspaceSsoPage = definePage({
  pattern: SSO_PATH,
  actions: ["set_sso_provider", "remove_sso_provider"],
  resolve: async () => ({}),
  async render(ctx) {
    return {
      title: "Single sign-on",
      breadcrumb: [home, { label: "Single sign-on" }],
      blocks: ssoView(await loadSso(ctx)),
    };
  },
});
