// How a workspace and its people come to exist outside the demo: the operator's CLI (cli/cadre.ts)
// and sign-up call these. A person made here has no password: they get a set-up link (mailed
// when mail is set up, printed by the CLI) and choose one on its page (setup.ts).
import type { Db, PrismaClient } from "../../db/prisma.ts";
import { ConflictError, NotFoundError, ValidationError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { freePersonHandle, workspaceHandleProblem } from "./handles.ts";
import { queueAccountMail } from "./mail.ts";
import { issueLink } from "./one-time-links.ts";

/** The page a set-up link opens (its token in the path, as the mail carries it). */
export const setupPath = (token: string) => `/setup/${token}`;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function emailProblem(email: string): string | null {
  return EMAIL.test(email) && email.length <= 200 ? null : `“${email}” is not an email address.`;
}

export interface SetupInvite {
  userId: string;
  handle: string;
  email: string;
  /** Raw token: printed once by the CLI, or in the mail only. */
  token: string;
  mailId: string | null;
}

/**
 * A person of the workspace, in `tx`: with no password (`passwordHash` null: they choose it
 * through a set-up link) or with the one they chose signing up.
 */
export async function addPersonIn(
  tx: Db,
  input: { tenantId: string; email: string; name?: string; admin: boolean; passwordHash: string | null },
) {
  const email = input.email.trim().toLowerCase();
  const problem = emailProblem(email);
  if (problem) throw new ValidationError([{ field: "email", label: "Email", message: problem }]);
  const existing = await tx.user.findUnique({
    where: { tenantId_email: { tenantId: input.tenantId, email } },
  });
  if (existing) throw new ConflictError(`${email} is already in this workspace, as @${existing.handle}.`);
  const handle = await freePersonHandle(tx, input.tenantId, email);
  return tx.user.create({
    data: {
      id: newId(),
      tenantId: input.tenantId,
      handle,
      name: input.name?.trim() || handle,
      email,
      kind: "person",
      passwordHash: input.passwordHash,
      tenantAdmin: input.admin,
    },
  });
}

/**
 * A person with no password yet, and their set-up link (and its mail when `mail`), in `tx`.
 * `origin` is the workspace's address from outside, for the link.
 */
async function addPersonWithSetup(
  tx: Db,
  input: {
    tenantId: string;
    workspaceName: string;
    email: string;
    name?: string;
    admin: boolean;
    origin: string;
    mail: boolean;
    createdById?: string | null;
  },
): Promise<SetupInvite> {
  const user = await addPersonIn(tx, { ...input, passwordHash: null });
  const { handle } = user;
  const email = input.email.trim().toLowerCase();
  const { token } = await issueLink(tx, {
    tenantId: input.tenantId,
    purpose: "setup",
    email,
    userId: user.id,
    createdById: input.createdById ?? null,
  });
  const mailId = input.mail
    ? await queueAccountMail(tx, {
        tenantId: input.tenantId,
        userId: user.id,
        kind: "account.setup",
        subject: `Set up your account in ${input.workspaceName} on Cadre`,
        paragraphs: [
          `An account was made for you in ${input.workspaceName}${input.admin ? ", as its admin" : ""}. Choose your name and a password to sign in.`,
          { label: "Set up your account", url: `${input.origin}${setupPath(token)}` },
          "The link works once, for 7 days.",
        ],
      })
    : null;
  return { userId: user.id, handle, email, token, mailId };
}

export interface CreatedWorkspace<Admin = SetupInvite> {
  tenant: { id: string; subdomain: string; name: string };
  admin: Admin;
}

/** The workspace's handle and name, trimmed and checked; a 400 naming the field otherwise. */
export function checkWorkspaceInput(
  input: { handle: string; name: string },
  labels = { handle: "Handle", name: "Name" },
): { handle: string; name: string } {
  const handle = input.handle.trim().toLowerCase();
  const name = input.name.trim();
  const issues = [];
  const problem = workspaceHandleProblem(handle);
  if (problem) issues.push({ field: "handle", label: labels.handle, message: problem });
  if (!name || name.length > 100)
    issues.push({ field: "name", label: labels.name, message: "1–100 characters" });
  if (issues.length) throw new ValidationError(issues);
  return { handle, name };
}

export const handleTaken = (handle: string) => `The workspace handle “${handle}” is taken: choose another.`;

/**
 * In `tx`: a workspace, its first admin (made by `makeAdmin` once the workspace exists) and
 * its first studio, "General", with the admin in it. The caller's transaction holds whatever
 * else belongs with it (sign-up takes its link in it).
 */
export async function createWorkspaceIn<Admin extends { userId: string }>(
  tx: Db,
  input: { handle: string; name: string },
  makeAdmin: (tenant: { id: string; name: string; subdomain: string }) => Promise<Admin>,
): Promise<CreatedWorkspace<Admin>> {
  const { handle, name } = checkWorkspaceInput(input);
  if (await tx.tenant.findUnique({ where: { subdomain: handle } }))
    throw new ConflictError(handleTaken(handle));
  const tenant = await tx.tenant.create({ data: { id: newId(), subdomain: handle, name } });
  const admin = await makeAdmin(tenant);
  await tx.studio.create({
    data: {
      id: newId(),
      tenantId: tenant.id,
      handle: "general",
      name: "General",
      inviteCode: newId(10),
      createdById: admin.userId,
      members: { create: [{ userId: admin.userId, tenantId: tenant.id, role: "admin" }] },
    },
  });
  return { tenant, admin };
}

/**
 * The operator's `workspace create`: a workspace, its first admin (no password yet, a set-up
 * link) and its first studio: all or nothing.
 */
export async function createWorkspace(
  db: PrismaClient,
  input: {
    handle: string;
    name: string;
    adminEmail: string;
    adminName?: string;
    origin: (handle: string) => string;
    mail: boolean;
  },
): Promise<CreatedWorkspace> {
  const checked = checkWorkspaceInput(input);
  return db.$transaction((tx) =>
    createWorkspaceIn(tx, checked, (tenant) =>
      addPersonWithSetup(tx, {
        tenantId: tenant.id,
        workspaceName: tenant.name,
        email: input.adminEmail,
        name: input.adminName,
        admin: true,
        origin: input.origin(tenant.subdomain),
        mail: input.mail,
      }),
    ),
  );
}

export async function findWorkspace(db: Db, handle: string) {
  const tenant = await db.tenant.findUnique({ where: { subdomain: handle.trim().toLowerCase() } });
  if (!tenant) throw new NotFoundError(`No workspace with the handle “${handle}”.`);
  return tenant;
}

/** The operator's `person add`: a person (admin or not) with a set-up link. */
export async function addPerson(
  db: PrismaClient,
  input: {
    workspace: string;
    email: string;
    name?: string;
    admin: boolean;
    origin: (handle: string) => string;
    mail: boolean;
  },
): Promise<SetupInvite> {
  const tenant = await findWorkspace(db, input.workspace);
  return db.$transaction((tx) =>
    addPersonWithSetup(tx, {
      tenantId: tenant.id,
      workspaceName: tenant.name,
      email: input.email,
      name: input.name,
      admin: input.admin,
      origin: input.origin(tenant.subdomain),
      mail: input.mail,
    }),
  );
}

/** Recovery: makes a person admin whatever the workspace's admins say (the operator's CLI only). */
export async function makeAdmin(db: PrismaClient, workspace: string, email: string) {
  const tenant = await findWorkspace(db, workspace);
  const address = email.trim().toLowerCase();
  const user = await db.user.findUnique({
    where: { tenantId_email: { tenantId: tenant.id, email: address } },
  });
  if (user?.kind !== "person")
    throw new NotFoundError(`No person with the address ${address} in ${tenant.subdomain}.`);
  await db.user.update({ where: { id: user.id }, data: { tenantAdmin: true } });
  return { tenant, user, wasAdmin: user.tenantAdmin };
}

export async function listWorkspaces(db: Db) {
  const tenants = await db.tenant.findMany({ orderBy: { createdAt: "asc" } });
  const counts = await db.user.groupBy({
    by: ["tenantId"],
    where: { kind: "person", archivedAt: null },
    _count: { _all: true },
  });
  const people = new Map(counts.map((count) => [count.tenantId, count._count._all]));
  return tenants.map((tenant) => ({ ...tenant, people: people.get(tenant.id) ?? 0 }));
}
