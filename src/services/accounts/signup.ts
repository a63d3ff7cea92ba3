// Self-serve sign-up at the base host (SIGNUP; routes/signup.ts): an address, a confirmation
// link by mail (24 h, single use, only its hash stored, no workspace yet), then the workspace's
// name and handle and the person's name and password. Taking the link, making the workspace
// with its admin and General, and issuing the sign-in hand-over are one transaction.
//
// The session cookie is the workspace host's own (http/cookies.ts: no Domain, `__Host-` over
// https), so the base host cannot sign anyone in there: the sign-up ends with a redirect to a
// short-lived single-use `signup` link of the new workspace, which its host takes for a session.
import type { Db, PrismaClient } from "../../db/prisma.ts";
import type { User } from "../../generated/prisma/client.ts";
import { noSoonerThan } from "../../lib/answer-floor.ts";
import { ConflictError, ValidationError } from "../../lib/errors.ts";
import { textProblem } from "../../lib/text.ts";
import { hashPassword } from "../passwords.ts";
import { workspaceHandleProblem } from "./handles.ts";
import { queueAccountMail } from "./mail.ts";
import {
  checkLink,
  consumeLink,
  issueLink,
  LINK_LIFETIME_HOURS,
  type LinkOutcome,
} from "./one-time-links.ts";
import { checkPasswordStrength } from "./password-strength.ts";
import { recordSecurityEvent } from "./security-events.ts";
import { addPersonIn, createWorkspaceIn, handleTaken } from "./workspaces.ts";

/** SIGNUP as config.ts validated it: closed, open, or open to these domains only. */
export type SignupPolicy = { open: false } | { open: true; domains: string[] | null };

export function signupPolicy(setting: string): SignupPolicy {
  if (setting === "closed") return { open: false };
  if (setting === "open") return { open: true, domains: null };
  return { open: true, domains: setting.split(",").map((domain) => domain.trim()) };
}

/** Whether this address may sign up: the part after its last @ is one of the domains, exactly. */
export function signupAllows(policy: SignupPolicy, email: string): boolean {
  if (!policy.open) return false;
  const domain = email.slice(email.lastIndexOf("@") + 1).toLowerCase();
  return policy.domains === null || policy.domains.includes(domain);
}

/** Every request's answer waits this long at least: longer than writing the link and its mail on a busy machine. */
export const SIGNUP_ANSWER_FLOOR_MS = 400;

export const SIGNUP_ANSWER = `If sign-up is open to that address, a link to create your workspace is on its way to it. It works once, for ${LINK_LIFETIME_HOURS.signup} hours. Nothing came? Check the address and your spam folder, then ask again.`;

export const signupPath = (token: string) => `/signup/${token}`;

/** The sign-in hand-over lives minutes: it is only ever followed at once, by the redirect. */
const HANDOVER_HOURS = 10 / 60;

/**
 * Mails a sign-up link when the policy allows `email`; resolves the same either way, after the
 * floor. `origin` is the base host's address from the configuration, never the request's Host.
 */
export async function requestSignup(db: PrismaClient, policy: SignupPolicy, email: string, origin: string) {
  await noSoonerThan(SIGNUP_ANSWER_FLOOR_MS, async () => {
    if (!signupAllows(policy, email)) return;
    await db.$transaction(async (tx) => {
      const { token } = await issueLink(tx, { tenantId: null, purpose: "signup", email });
      await queueAccountMail(tx, {
        tenantId: null,
        to: email,
        kind: "account.signup",
        subject: "Create your Cadre workspace",
        paragraphs: [
          "Someone (we hope you) asked to create a Cadre workspace with this address.",
          { label: "Create your workspace", url: `${origin}${signupPath(token)}` },
          `The link works once, for ${LINK_LIFETIME_HOURS.signup} hours.`,
          "Did not ask for it? Ignore this mail: nothing is made without it.",
        ],
      });
    });
  });
}

export interface SignupForm {
  workspaceName: string;
  handle: string;
  name: string;
  password: string;
}

/** The sign-up form's labels: every problem names its field by them. */
export const SIGNUP_LABELS = {
  workspaceName: "Workspace name",
  handle: "Workspace handle",
  name: "Your name",
  password: "Password",
} as const;

/** The form's problems, all at once, each naming its field; `reserved` is DEFAULT_WORKSPACE's handle. */
function checkSignupForm(form: SignupForm, email: string, reserved?: string): void {
  const issues = [];
  const workspaceName = form.workspaceName.trim();
  const handle = form.handle.trim().toLowerCase();
  const name = form.name.trim();
  const nameProblem = (value: string) =>
    !value || value.length > 100 ? "1–100 characters" : textProblem(value);
  const workspaceNameProblem = nameProblem(workspaceName);
  if (workspaceNameProblem)
    issues.push({
      field: "workspace_name",
      label: SIGNUP_LABELS.workspaceName,
      message: workspaceNameProblem,
    });
  const handleProblem =
    workspaceHandleProblem(handle) ??
    (handle === reserved ? `“${handle}” is reserved: choose another workspace handle.` : null);
  if (handleProblem) issues.push({ field: "handle", label: SIGNUP_LABELS.handle, message: handleProblem });
  const personNameProblem = nameProblem(name);
  if (personNameProblem)
    issues.push({ field: "name", label: SIGNUP_LABELS.name, message: personNameProblem });
  const strength = checkPasswordStrength(form.password, [name, email, handle, workspaceName]);
  if (!strength.ok)
    issues.push({ field: "password", label: SIGNUP_LABELS.password, message: strength.reason });
  if (issues.length) throw new ValidationError(issues, "Please fix");
}

const takenIssue = (handle: string) =>
  new ValidationError(
    [{ field: "handle", label: SIGNUP_LABELS.handle, message: handleTaken(handle) }],
    "Please fix",
  );

/** The link's state before the form is sent: its address, or the words saying why not. */
export function checkSignupLink(db: Db, token: string): Promise<LinkOutcome> {
  return checkLink(db, null, "signup", token);
}

/**
 * The link's one use: the workspace, its admin (with the password chosen here) and General, in
 * one transaction with taking the link; returns the new workspace and the token of its sign-in
 * hand-over. A refused link is a 409 with its reason; a bad field a 400 naming it.
 */
export async function completeSignup(
  db: PrismaClient,
  input: { token: string; form: SignupForm; address?: string; reservedHandle?: string },
) {
  const checked = await checkSignupLink(db, input.token);
  if (!checked.ok) throw new ConflictError(checked.reason);
  const email = checked.link.email ?? "";
  checkSignupForm(input.form, email, input.reservedHandle);
  const handle = input.form.handle.trim().toLowerCase();
  if (await db.tenant.findUnique({ where: { subdomain: handle } })) throw takenIssue(handle);
  // Hashed before the transaction: scrypt takes a while and holds no row.
  const passwordHash = await hashPassword(input.form.password);
  try {
    return await db.$transaction(async (tx) => {
      const taken = await consumeLink(tx, null, "signup", input.token);
      if (!taken.ok) throw new ConflictError(taken.reason);
      const { tenant, admin } = await createWorkspaceIn(
        tx,
        { handle, name: input.form.workspaceName },
        async (made) => {
          const user = await addPersonIn(tx, {
            tenantId: made.id,
            email,
            name: input.form.name,
            admin: true,
            passwordHash,
          });
          return { userId: user.id, handle: user.handle };
        },
      );
      await recordSecurityEvent(tx, {
        tenantId: tenant.id,
        userId: admin.userId,
        actorId: admin.userId,
        kind: "signed_up",
        detail: `@${admin.handle} created the workspace by signing up, as its admin.`,
        address: input.address,
        mail: false,
      });
      const handover = await issueLink(tx, {
        tenantId: tenant.id,
        purpose: "signup",
        email,
        userId: admin.userId,
        lifetimeHours: HANDOVER_HOURS,
      });
      return { tenant, email, userId: admin.userId, handoverToken: handover.token };
    });
  } catch (err) {
    // Someone took the handle between the check above and this transaction.
    if (err instanceof ConflictError && err.message === handleTaken(handle)) throw takenIssue(handle);
    throw err;
  }
}

/** Takes the new workspace's hand-over in `tx`: the admin to sign in, or the refusal's words. */
export async function takeHandover(
  tx: Db,
  tenantId: string,
  token: string,
): Promise<{ user: User } | { refusal: string }> {
  const taken = await consumeLink(tx, tenantId, "signup", token);
  if (!taken.ok) return { refusal: taken.reason };
  const user = taken.link.userId
    ? await tx.user.findFirst({ where: { id: taken.link.userId, tenantId } })
    : null;
  if (user?.kind !== "person" || user.archivedAt || user.deactivatedAt)
    return { refusal: "This account can no longer sign in: ask a workspace admin." };
  return { user };
}
