// The passkeys section of a person's security page: the ones they have, a form to rename or
// remove each, and the form that adds one. Adding is a WebAuthn ceremony a script runs
// (public/passkeys.js, over routes/passkeys.ts), so that form is markup shown only where a
// browser can do it; the markdown an agent reads says so and offers nothing to call.
import { escapeHtml } from "../registry/html.ts";
import { code, mdEscape } from "../registry/markdown.ts";
import type { Block } from "../registry/types.ts";
import { when } from "./format.ts";

/** Where routes/passkeys.ts serves the browser half of @simplewebauthn. */
export const BROWSER_BUNDLE_PATH = "/assets/vendor/simplewebauthn-browser.js";

/** The scripts a page with a passkey form loads (files: the CSP allows no inline script). */
export const PASSKEY_SCRIPTS = `<script src="${BROWSER_BUNDLE_PATH}" defer></script>\n<script src="/assets/passkeys.js" defer></script>`;

export interface ListedPasskey {
  id: string;
  name: string;
  deviceType: string;
  backedUp: boolean;
  createdAt: Date;
  lastUsedAt: Date | null;
}

const INTRO =
  "## Passkeys\n\nA passkey lives on your phone, your computer or a security key and signs you in with your fingerprint, face or PIN: nothing to type, nothing a fake site can catch. Use one as the second step after your password, or alone with “Sign in with a passkey”. Each workspace has its own: one made here works only here.";

/** The table of passkeys: pure, so it is tested with plain rows. */
export function passkeysTable(passkeys: ListedPasskey[]): string {
  if (!passkeys.length) return "_You have no passkey yet._";
  const kind = (key: ListedPasskey) =>
    key.deviceType === "multiDevice" ? `synced${key.backedUp ? ", backed up" : ""}` : "this device only";
  return [
    "| name | kind | added | last used | id |",
    "|---|---|---|---|---|",
    ...passkeys.map(
      (key) =>
        `| ${mdEscape(key.name)} | ${kind(key)} | ${when(key.createdAt)} | ${key.lastUsedAt ? when(key.lastUsedAt) : "never"} | ${code(key.id)} |`,
    ),
  ].join("\n");
}

/** The form public/passkeys.js runs; hidden until the script finds a browser that makes passkeys. */
const ADD_FORM = `<h3>Add a passkey</h3>
<form class="action-form passkey-form" method="post" action="/passkeys/registration" data-passkey="register" data-options="/passkeys/registration/options" hidden>
<div class="field"><label for="passkey-name">Name</label><input id="passkey-name" name="name" maxlength="60" required placeholder="Laptop, Phone…" autocomplete="off"></div>
<button type="submit">Add a passkey</button>
<p class="hint" data-passkey-status role="status" aria-live="polite"></p>
</form>
<p class="hint" data-passkey-unsupported>Adding a passkey needs JavaScript on, in a browser that makes passkeys.</p>
${PASSKEY_SCRIPTS}`;

/**
 * "Sign in with a passkey" on the login form: any passkey of this workspace the browser holds,
 * no address typed. Shown only where the script finds passkeys work.
 */
export function passkeySignInForm(next: string): string {
  return `<form method="post" action="/login/passkey" class="action-form passkey-form" data-passkey="sign-in" data-options="/login/passkey/options" hidden>
<input type="hidden" name="next" value="${escapeHtml(next)}">
<button type="submit" class="secondary">Sign in with a passkey</button>
<p class="hint" data-passkey-status role="status" aria-live="polite"></p>
</form>
${PASSKEY_SCRIPTS}`;
}

/**
 * The sign-in's second step with one of the person's passkeys (after their password): the
 * challenge is bound to the half session (routes/passkeys.ts). Without JavaScript it says so,
 * and the other methods on the page still work.
 */
export function passkeySecondStepForm(next: string, csrf: string): string {
  return `<form method="post" action="/login/verify/passkey" class="action-form passkey-form" data-passkey="second-step" data-options="/login/verify/passkey/options" hidden>
<h2>One of your passkeys</h2>
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">
<input type="hidden" name="next" value="${escapeHtml(next)}">
<button type="submit">Use a passkey</button>
<p class="hint" data-passkey-status role="status" aria-live="polite"></p>
</form>
<p class="hint" data-passkey-unsupported>Using a passkey needs JavaScript on, in a browser that makes passkeys.</p>
${PASSKEY_SCRIPTS}`;
}

export function passkeyBlocks(passkeys: ListedPasskey[]): Block[] {
  const forms: Block[] = passkeys.flatMap((key) => [
    {
      form: {
        action: "rename_passkey",
        fixed: { id: key.id },
        fields: ["name"],
        values: { name: key.name },
        label: `Rename “${key.name}”`,
        style: "folded",
      },
    },
    { form: { action: "remove_passkey", fixed: { id: key.id }, label: `Remove “${key.name}”` } },
  ]);
  return [
    { md: INTRO },
    { md: passkeysTable(passkeys) },
    ...forms,
    {
      md: "Passkeys are added in a browser, on this page: the authenticator has to be there.",
      html: ADD_FORM,
    },
  ];
}
