// The sign-up pages' forms (routes/signup.ts). Neither names its own address: each posts back
// to the page it is on, so the page a link opens never repeats the link's token.
import { MIN_LENGTH } from "../services/accounts/password-strength.ts";
import { SIGNUP_LABELS } from "../services/accounts/signup.ts";
import { escapeHtml } from "../services/registry/html.ts";

const errorBox = (error: string) =>
  error ? `<div class="form-errors" role="alert">${escapeHtml(error)}</div>` : "";

export function emailForm(csrf: string, email = "", error = ""): string {
  return `<div class="login">
${errorBox(error)}
<p>Type your address: we mail you a link to name your workspace and choose your password.</p>
<form method="post" action="/signup" class="action-form">
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">
<div class="field"><label for="email">Email</label><input type="email" id="email" name="email" value="${escapeHtml(email)}" autocomplete="email" required autofocus></div>
<button type="submit">Mail me a link</button>
</form>
</div>`;
}

export interface SignupFormState {
  /** The address the link was mailed to: the admin's, shown, not editable. */
  email: string;
  workspaceName: string;
  handle: string;
  name: string;
  /** By field name: the message under its input. */
  errors: Record<string, string>;
  alert?: string;
}

export function signupForm(csrf: string, state: SignupFormState): string {
  const error = (field: string) =>
    state.errors[field] ? `<p class="field-error" role="alert">${escapeHtml(state.errors[field])}</p>` : "";
  const field = (name: string, label: string, value: string, extra: string, hint = "") =>
    `<div class="field"><label for="${name}">${label}</label><input id="${name}" name="${name}" value="${escapeHtml(value)}" ${extra}>${error(name)}${hint ? `<p class="hint">${hint}</p>` : ""}</div>`;
  return `<div class="login">
${errorBox(state.alert ?? "")}
${state.email ? `<p>You sign in as <strong>${escapeHtml(state.email)}</strong>, the workspace's first admin.</p>` : ""}
<form method="post" class="action-form">
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">
${field("workspace_name", SIGNUP_LABELS.workspaceName, state.workspaceName, 'autocomplete="organization" required')}
${field("handle", SIGNUP_LABELS.handle, state.handle, 'required pattern="[a-z0-9][a-z0-9\\-]*[a-z0-9]" autocapitalize="none"', "2–40 lowercase letters, digits and inner hyphens: the first part of its address.")}
${field("name", SIGNUP_LABELS.name, state.name, 'autocomplete="name" required')}
<div class="field"><label for="password">${SIGNUP_LABELS.password}</label><input type="password" id="password" name="password" autocomplete="new-password" required minlength="${MIN_LENGTH}">${error("password")}
<p class="hint">At least ${MIN_LENGTH} characters; a few unrelated words together work well.</p></div>
<button type="submit">Create the workspace and sign in</button>
</form>
</div>`;
}
