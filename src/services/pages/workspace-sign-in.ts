// /settings/sign-in: how people sign in to the workspace. The two-factor requirement (admins set
// it; everyone reads it) and where single sign-on is set up (/settings/sso). Read from the
// database, not the request's tenant: the answer to a change shows the change.
import { POLICY_LABELS } from "../accounts/second-factor.ts";
import { ssoProviderOf } from "../accounts/sso-settings.ts";
import { SIGN_IN_PATH } from "../actions/two-factor-policy.ts";
import { SSO_PATH } from "../actions/workspace-sso.ts";
import { link } from "../registry/markdown.ts";
import { type Block, definePage } from "../registry/types.ts";
import { home } from "./format.ts";

const EXPLAINED =
  "Two-factor sign-in asks for a second proof after the password: a code from an authenticator app, or a passkey (a passkey alone also signs in). Each person sets theirs up on their own security page. People signing in through single sign-on are the identity provider's to protect: require MFA there.";

export const workspaceSignInPage = definePage({
  pattern: SIGN_IN_PATH,
  actions: ["set_two_factor_policy"],
  resolve: async () => ({}),
  async render(ctx) {
    const [tenant, sso] = await Promise.all([
      ctx.db.tenant.findUniqueOrThrow({ where: { id: ctx.tenant.id }, select: { twoFactorPolicy: true } }),
      ssoProviderOf(ctx.db, ctx.tenant.id),
    ]);
    const policy = tenant.twoFactorPolicy;
    const blocks: Block[] = [
      { md: `## Two-factor sign-in\n\n**${POLICY_LABELS[policy]}.** ${EXPLAINED}` },
      ctx.actor.tenantAdmin
        ? {
            form: {
              action: "set_two_factor_policy",
              fixed: {},
              label: "Save the requirement",
              style: "block",
              values: { policy },
            },
          }
        : { md: "_Only workspace admins change the requirement._" },
      {
        md: `## Single sign-on\n\n${sso ? `People may sign in with ${sso.displayName}${sso.ssoOnly ? " only: passwords are refused" : " or their password"}.` : "Not set up: people sign in with their password."} ${link("Single sign-on settings", SSO_PATH)} · ${link("Your security page", `/u/${ctx.actor.handle}/settings/security`)}`,
      },
    ];
    return { title: "Sign-in", breadcrumb: [home, { label: "Sign-in" }], blocks };
  },
});
