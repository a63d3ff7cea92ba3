// A person's security page: where they are signed in (browser, address, last seen), with the
// forms that end a session or all the others, change their password, and their second factors
// (an authenticator app, security-two-factor.ts; passkeys, security-passkeys.ts). Like every settings
// page it exists only for its owner.
import type { Session } from "../../generated/prisma/client.ts";
import { passkeysOf } from "../accounts/passkeys.ts";
import { currentSession } from "../actions/sessions.ts";
import { code, mdEscape } from "../registry/markdown.ts";
import type { Block, PageDef } from "../registry/types.ts";
import { browserName } from "../sessions.ts";
import { home, when } from "./format.ts";
import { passkeyBlocks } from "./security-passkeys.ts";
import { twoFactorSection } from "./security-two-factor.ts";
import { ownSettings } from "./settings.ts";

type Listed = Pick<Session, "id" | "userAgent" | "ipAddress" | "createdAt" | "lastSeenAt" | "expiresAt">;

/** The sessions table, this one marked: pure, so it is tested with plain rows. */
export function sessionsTable(sessions: Listed[], current: string | undefined): string {
  if (!sessions.length) return "_No session is signed in: you are using an API token._";
  const rows = sessions.map(
    (s) =>
      `| ${mdEscape(browserName(s.userAgent))}${s.id === current ? " (this session)" : ""} | ${mdEscape(s.ipAddress || "unknown")} | ${when(s.createdAt)} | ${when(s.lastSeenAt)} | ${when(s.expiresAt)} | ${code(s.id)} |`,
  );
  return [
    "| browser | address | signed in | last seen | ends at the latest | id |",
    "|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}

export const securityPage: PageDef = {
  pattern: "/u/:handle/settings/security",
  actions: [
    "end_session",
    "end_other_sessions",
    "change_password",
    "start_two_factor",
    "confirm_two_factor",
    "renew_recovery_codes",
    "turn_off_two_factor",
    "rename_passkey",
    "remove_passkey",
  ],
  resolve: (ctx, params) => ownSettings(ctx, params.handle!),
  async render(ctx, scope) {
    const user = scope.user!;
    const current = currentSession(ctx);
    // Live ones only: a session past its idle limit is already dead, and is tidied later.
    const sessions = await ctx.db.session.findMany({
      where: { userId: user.id, tenantId: ctx.tenant.id, expiresAt: { gt: new Date() } },
      orderBy: { lastSeenAt: "desc" },
      take: 100,
    });
    const passkeys = await passkeysOf(ctx.db, ctx.tenant.id, user.id);
    const others = sessions.filter((s) => s.id !== current);
    const twoFactor = await twoFactorSection(ctx, user);
    const endForms: Block[] = others.map((s) => ({
      form: {
        action: "end_session",
        fixed: { id: s.id },
        label: `End ${browserName(s.userAgent)} at ${s.ipAddress || "an unknown address"}`,
      },
    }));
    // The sessions' actions only when there is another session to end; two-factor's by its state.
    const offers = [
      ...(others.length ? ["end_session", "end_other_sessions"] : []),
      "change_password",
      ...twoFactor.offers,
      "rename_passkey",
      "remove_passkey",
    ];
    return {
      title: "Security",
      offers,
      breadcrumb: [
        home,
        { label: `@${user.handle}`, path: `/u/${user.handle}` },
        { label: "Settings", path: `/u/${user.handle}/settings` },
        { label: "Security" },
      ],
      blocks: [
        {
          md: "## Where you are signed in\n\nEach browser you signed in from, newest use first. A session ends after two weeks unused or a month after sign-in (the operator may choose other limits); changing or resetting your password ends every other one. Don't recognise one? End it, then change your password.",
        },
        { md: sessionsTable(sessions, current) },
        ...endForms,
        ...(others.length
          ? [{ form: { action: "end_other_sessions", fixed: {}, label: "End all other sessions" } }]
          : []),
        {
          md: `## Password\n\nChanging it needs the one you have now. Forgot it? Sign out and use “Forgot your password?” on the sign-in page. [API tokens](/u/${user.handle}/settings/tokens) are not ended by a password change: revoke them there.`,
        },
        { form: { action: "change_password", fixed: {}, label: "Change password", style: "block" } },
        ...twoFactor.blocks,
        ...passkeyBlocks(passkeys),
      ],
    };
  },
};
