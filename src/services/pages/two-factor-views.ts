// How setting up an authenticator looks, shared by the security page and the sign-in's
// enrolment step: the QR code as inline SVG (uqr, drawn here: no external service sees the
// seed), the secret in text for apps that cannot scan, and the code that confirms it. The
// secret is only ever passed in while the enrolment is pending, for its owner's page.
import { renderSVG } from "uqr";
import { escapeHtml } from "../registry/html.ts";

/** The QR code of an otpauth:// address, sized by attributes (the SVG has only a viewBox). */
export function qrSvg(uri: string, label: string): string {
  return renderSVG(uri, { border: 2 }).replace(
    "<svg ",
    `<svg width="208" height="208" role="img" aria-label="${escapeHtml(label)}" class="qr-code" `,
  );
}

/** Groups of four, as apps show them: easier to type from a screen. */
export function spacedSecret(secret: string): string {
  return secret.replace(/(.{4})(?=.)/g, "$1 ");
}

export interface EnrolmentView {
  csrf: string;
  next?: string;
  pending: { secret: string; uri: string } | null;
  startAction: string;
  confirmAction: string;
  /** Extra hidden fields a registry form carries (its `_action`). */
  hidden?: Record<string, string>;
}

function hiddenFields(view: EnrolmentView): string {
  const fields: Record<string, string> = {
    _csrf: view.csrf,
    ...(view.next && { next: view.next }),
    ...view.hidden,
  };
  return Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join("");
}

/** The start button, or (pending) the QR code, the secret and the confirming code. */
export function enrolmentHtml(view: EnrolmentView): string {
  if (!view.pending)
    return `<form method="post" action="${escapeHtml(view.startAction)}" class="action-form">${hiddenFields(view)}
<p>An authenticator app (on your phone or computer) shows a new six-digit code every 30 seconds; Cadre asks for one after your password.</p>
<button type="submit">Set up an authenticator app</button></form>`;
  return `<div class="totp-enrolment">
<p>1. Scan this code with your authenticator app:</p>
${qrSvg(view.pending.uri, "QR code to add this account to an authenticator app")}
<p>Or type this secret into the app (time-based, six digits, 30 seconds):</p>
<p><code class="totp-secret" data-secret="${escapeHtml(view.pending.secret)}">${escapeHtml(spacedSecret(view.pending.secret))}</code></p>
<form method="post" action="${escapeHtml(view.confirmAction)}" class="action-form">${hiddenFields(view)}
<div class="field"><label for="totp-code">2. Code from the app</label><input type="text" id="totp-code" name="code" inputmode="numeric" autocomplete="one-time-code" required autofocus><p class="hint">The six digits the app shows now.</p></div>
<button type="submit">Turn on two-factor</button></form>
</div>`;
}

/** Recovery codes, shown once (the answer to the request that made them). */
export function recoveryCodesHtml(codes: string[]): string {
  return `<h2>Your recovery codes</h2>
<p role="status">Two-factor is on. Save these ten codes somewhere safe (a password manager, or on paper): each signs you in once if you lose your authenticator. They are shown only now.</p>
<ul class="recovery-codes">${codes.map((code) => `<li><code>${escapeHtml(code)}</code></li>`).join("")}</ul>`;
}
