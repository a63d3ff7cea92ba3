// A person's authenticator app, on their security page: set it up (a fresh secret shown while
// pending, confirmed by a code, which answers the first recovery codes once), make new
// recovery codes, turn it off. Each is a credential change: a session re-confirms first
// (confirmRecent), a token needs the `manage` scope, agents never (policy/capabilities.ts). The secret
// and the codes appear only in the answer that made them (ActionOutcome.secret) and on the
// owner's page while the enrolment is pending.
import { z } from "zod";
import { ConflictError, ValidationError } from "../../lib/errors.ts";
import { factorsOf, policyRequires } from "../accounts/second-factor.ts";
import { hasTotp, startTotpEnrolment } from "../accounts/totp.ts";
import { confirmTotp, renewRecoveryCodes, turnOffTotp } from "../accounts/two-factor.ts";
import { toSelf } from "../registry/audiences.ts";
import { type ActionCtx, defineAction } from "../registry/types.ts";
import { peopleOnly } from "./notification-settings.ts";
import { securityPath } from "./sessions.ts";

const RECOVERY_HELP =
  "Save these ten codes somewhere safe (a password manager, or on paper): each signs you in once if you lose your authenticator. They are shown only now.";

const where = (ctx: ActionCtx) => ({ origin: ctx.origin ?? null });

/** What every change here is: a write to the person's own account, for people only. */
const OWN_SECOND_FACTOR = {
  writes: true,
  manage: true,
  audience: toSelf("two-factor sign-in"),
  available: peopleOnly,
} as const;

/** The answer that shows new recovery codes, once (the /secrets page a new token uses). */
function showCodes(ctx: ActionCtx, notice: string, codes: string[]) {
  return {
    status: 200 as const,
    location: securityPath(ctx.actor.handle),
    notice,
    secret: codes.join("\n"),
    secretLabel: "Your recovery codes",
    secretHelp: RECOVERY_HELP,
  };
}

export const startTwoFactor = defineAction({
  name: "start_two_factor",
  description: "Set up an authenticator app for two-factor sign-in (shows a QR code and its secret)",
  params: z.object({}),
  ...OWN_SECOND_FACTOR,
  confirmRecent: true,
  async execute(ctx) {
    const started = await startTotpEnrolment(ctx.tx, ctx.actor);
    if (started === "already_on")
      throw new ConflictError("Two-factor is on already: turn it off first to use another app.");
    return {
      status: 200,
      location: securityPath(ctx.actor.handle),
      notice:
        "Scan the QR code with your authenticator app, then type the code it shows to turn two-factor on.",
    };
  },
});

export const confirmTwoFactor = defineAction({
  name: "confirm_two_factor",
  description: "Turn two-factor on with a code from the authenticator app being set up",
  params: z.object({
    code: z.string().trim().min(1, "required").max(20, "at most 20 characters").meta({
      label: "Code from the app",
      description: "the six digits the app shows now",
    }),
  }),
  ...OWN_SECOND_FACTOR,
  async execute(ctx, params) {
    if (await hasTotp(ctx.tx, ctx.actor)) throw new ConflictError("Two-factor is on already.");
    const codes = await confirmTotp(ctx.tx, ctx.actor, params.code, where(ctx));
    if (!codes)
      throw new ValidationError([
        {
          field: "code",
          label: "Code from the app",
          message:
            "that is not the code the app shows now (or no set-up is pending): check the app's clock and try again",
        },
      ]);
    return showCodes(
      ctx,
      "Two-factor is on: from your next sign-in Cadre asks for a code after your password.",
      codes,
    );
  },
});

export const renewRecoveryCodesAction = defineAction({
  name: "renew_recovery_codes",
  description: "Make ten new recovery codes (the old ones stop working)",
  params: z.object({}),
  ...OWN_SECOND_FACTOR,
  confirmRecent: true,
  destructive: "Your current recovery codes stop working at once; the new ones are shown once.",
  async execute(ctx) {
    if (!(await hasTotp(ctx.tx, ctx.actor)))
      throw new ConflictError("Recovery codes come with two-factor: set up an authenticator app first.");
    const codes = await renewRecoveryCodes(ctx.tx, ctx.actor, where(ctx));
    return showCodes(ctx, "New recovery codes made: the old ones no longer work.", codes);
  },
});

export const turnOffTwoFactor = defineAction({
  name: "turn_off_two_factor",
  description: "Turn two-factor off: the authenticator app and the recovery codes stop working",
  params: z.object({}),
  ...OWN_SECOND_FACTOR,
  confirmRecent: true,
  destructive: "A password alone will sign you in. The app's codes and your recovery codes stop working.",
  async execute(ctx) {
    const factors = await factorsOf(ctx.tx, ctx.actor);
    if (factors.totp && !factors.passkeys && policyRequires(ctx.tenant.twoFactorPolicy, ctx.actor))
      throw new ConflictError(
        `${ctx.tenant.name} requires two-factor sign-in: add a passkey first, or ask an admin to change the requirement.`,
      );
    const off = await turnOffTotp(ctx.tx, ctx.actor, where(ctx));
    return {
      status: 200,
      location: securityPath(ctx.actor.handle),
      notice: off ? "Two-factor is off: a password alone signs you in." : "Two-factor was not on.",
    };
  },
});
