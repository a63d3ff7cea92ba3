// The "Two-factor sign-in" part of a person's security page: whether an authenticator app is
// on, the set-up while it is pending (the QR code drawn here as SVG for browsers, the secret
// and its otpauth:// address in text for everyone), and the forms to confirm it, make new
// recovery codes or turn it off. The secret shows only to its owner and only while pending.
import type { User } from "../../generated/prisma/client.ts";
import { recoveryCodesLeft } from "../accounts/recovery-codes.ts";
import { POLICY_LABELS, policyRequires } from "../accounts/second-factor.ts";
import { hasTotp, pendingTotp } from "../accounts/totp.ts";
import { escapeHtml } from "../registry/html.ts";
import { code } from "../registry/markdown.ts";
import type { Block, Ctx } from "../registry/types.ts";
import { qrSvg, spacedSecret } from "./two-factor-views.ts";

type Person = Pick<User, "id" | "tenantId" | "handle" | "tenantAdmin">;

function policyLine(ctx: Ctx, person: Person): string {
  const policy = ctx.tenant.twoFactorPolicy;
  if (policy === "off") return "";
  return policyRequires(policy, person)
    ? ` ${ctx.tenant.name} requires it of you (${POLICY_LABELS[policy].toLowerCase()}).`
    : ` ${ctx.tenant.name}: ${POLICY_LABELS[policy].toLowerCase()}.`;
}

function pendingBlocks(pending: { secret: string; uri: string }): Block[] {
  const text = `1. Scan the QR code with your authenticator app, or type this secret into it (time-based, six digits, 30 seconds): ${code(spacedSecret(pending.secret))}\n2. Type the code it shows below.`;
  return [
    {
      md: `${text}\n\nThe app's address, for apps that take one: ${code(pending.uri)}`,
      html: `<div class="totp-enrolment"><p>1. Scan this code with your authenticator app:</p>
${qrSvg(pending.uri, "QR code to add this account to an authenticator app")}
<p>Or type this secret into the app (time-based, six digits, 30 seconds):</p>
<p><code class="totp-secret">${escapeHtml(spacedSecret(pending.secret))}</code></p>
<p><a href="${escapeHtml(pending.uri)}">Or open it in an authenticator app on this device</a>.</p>
<p>2. Type the code it shows below.</p></div>`,
    },
    { form: { action: "confirm_two_factor", fixed: {}, label: "Turn on two-factor", style: "block" } },
    { form: { action: "start_two_factor", fixed: {}, label: "Start again with a new secret" } },
  ];
}

/** The section's blocks, and the two-factor actions it offers in the state it shows. */
export async function twoFactorSection(
  ctx: Ctx,
  person: Person,
): Promise<{ blocks: Block[]; offers: string[] }> {
  const heading = "## Two-factor sign-in";
  if (await hasTotp(ctx.db, person)) {
    const left = await recoveryCodesLeft(ctx.db, person);
    const blocks: Block[] = [
      {
        md: `${heading}\n\n**On**: after your password Cadre asks for a code from your authenticator app (or a passkey). ${left} of 10 recovery codes left; each signs you in once if you lose the app.${policyLine(ctx, person)}`,
      },
      { form: { action: "renew_recovery_codes", fixed: {}, label: "Make new recovery codes" } },
      { form: { action: "turn_off_two_factor", fixed: {}, label: "Turn off two-factor" } },
    ];
    return { blocks, offers: ["renew_recovery_codes", "turn_off_two_factor"] };
  }
  const intro = `${heading}\n\n**Off**: your password alone signs you in.${policyLine(ctx, person)} An authenticator app (on your phone or computer) shows a new six-digit code every 30 seconds; with it on, Cadre asks for one after your password.`;
  const pending = await pendingTotp(ctx.db, person, ctx.tenant.name);
  if (pending)
    return {
      blocks: [{ md: intro }, ...pendingBlocks(pending)],
      offers: ["confirm_two_factor", "start_two_factor"],
    };
  const start: Block = {
    form: { action: "start_two_factor", fixed: {}, label: "Set up an authenticator app" },
  };
  return { blocks: [{ md: intro }, start], offers: ["start_two_factor"] };
}
