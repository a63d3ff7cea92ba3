// `bin/cadre` (or `npm run cadre -- …`): the operator's commands for workspaces and people.
//
//   workspace create --handle acme --name "Acme" --admin-email alice@acme.test [--admin-name "Alice"]
//   workspace list
//   person add --workspace acme --email bob@acme.test [--name "Bob"] [--admin]
//   person make-admin --workspace acme --email bob@acme.test
//
// A person made here has no password: the command prints their one-time set-up link (and mails
// it when SMTP_URL is set; a mail that cannot go now is sent by the worker once it can).
// Bad input exits 2 with the reason, a refusal (handle taken, no such workspace) exits 1.
import { parseArgs } from "node:util";
import { type Config, loadConfig } from "../config.ts";
import { createPrisma, type PrismaClient } from "../db/prisma.ts";
import { AppError, ValidationError } from "../lib/errors.ts";
import { workspaceOrigin } from "../lib/origin.ts";
import {
  addPerson,
  createWorkspace,
  listWorkspaces,
  makeAdmin,
  type SetupInvite,
  setupPath,
} from "../services/accounts/workspaces.ts";
import { createMailTransport, mailFrom, sendQueuedMail } from "../services/reach/mail.ts";

const USAGE = `Usage:
  cadre workspace create --handle <handle> --name <name> --admin-email <email> [--admin-name <name>]
  cadre workspace list
  cadre person add --workspace <handle> --email <email> [--name <name>] [--admin]
  cadre person make-admin --workspace <handle> --email <email>`;

class UsageError extends Error {}

function options(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      handle: { type: "string" },
      name: { type: "string" },
      "admin-email": { type: "string" },
      "admin-name": { type: "string" },
      workspace: { type: "string" },
      email: { type: "string" },
      admin: { type: "boolean", default: false },
    },
  });
  if (positionals.length > 2) throw new UsageError(`Unexpected: ${positionals.slice(2).join(" ")}`);
  return { values, command: positionals.join(" ") };
}

function required(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== "string" || !value.trim()) throw new UsageError(`--${name} is required.`);
  return value;
}

/** Sends the set-up mail now when mail is set up; when the server is away, the worker sends it later. */
async function sendNow(db: PrismaClient, config: Config, invite: SetupInvite): Promise<string> {
  if (!invite.mailId || !config.SMTP_URL) return "Mail is not set up (SMTP_URL): send this link yourself.";
  const transport = createMailTransport(config.SMTP_URL);
  try {
    await sendQueuedMail(db, transport, mailFrom(config), invite.mailId);
    return `Mailed to ${invite.email}.`;
  } catch {
    return `The mail to ${invite.email} could not go yet: the worker sends it once the mail server answers.`;
  } finally {
    transport.close?.();
  }
}

async function run(db: PrismaClient, config: Config, command: string, values: Record<string, unknown>) {
  const origin = (handle: string) => workspaceOrigin(config, handle);
  const mail = Boolean(config.SMTP_URL);
  const printSetup = async (invite: SetupInvite, handle: string) => {
    console.log(`Set-up link for ${invite.email} (@${invite.handle}), works once for 7 days:`);
    console.log(`  ${origin(handle)}${setupPath(invite.token)}`);
    console.log(await sendNow(db, config, invite));
  };
  switch (command) {
    case "workspace create": {
      const created = await createWorkspace(db, {
        handle: required(values, "handle"),
        name: required(values, "name"),
        adminEmail: required(values, "admin-email"),
        adminName: values["admin-name"] as string | undefined,
        origin,
        mail,
      });
      console.log(
        `Created the workspace ${created.tenant.name} (${created.tenant.subdomain}) at ${origin(created.tenant.subdomain)}`,
      );
      await printSetup(created.admin, created.tenant.subdomain);
      return;
    }
    case "workspace list": {
      const workspaces = await listWorkspaces(db);
      if (!workspaces.length)
        console.log("No workspaces yet: cadre workspace create --handle … --name … --admin-email …");
      for (const workspace of workspaces)
        console.log(
          `${workspace.subdomain}\t${workspace.name}\t${workspace.people} people\t${origin(workspace.subdomain)}`,
        );
      return;
    }
    case "person add": {
      const workspace = required(values, "workspace");
      const invite = await addPerson(db, {
        workspace,
        email: required(values, "email"),
        name: values.name as string | undefined,
        admin: values.admin === true,
        origin,
        mail,
      });
      console.log(`Added @${invite.handle}${values.admin ? " as an admin" : ""}.`);
      await printSetup(invite, workspace.toLowerCase());
      return;
    }
    case "person make-admin": {
      const made = await makeAdmin(db, required(values, "workspace"), required(values, "email"));
      console.log(
        made.wasAdmin
          ? `@${made.user.handle} was already an admin of ${made.tenant.subdomain}.`
          : `@${made.user.handle} is now an admin of ${made.tenant.subdomain}.`,
      );
      return;
    }
    default:
      throw new UsageError(command ? `Unknown command: ${command}` : "No command given.");
  }
}

const config = loadConfig();
let parsed: ReturnType<typeof options>;
try {
  parsed = options(process.argv.slice(2));
} catch (err) {
  console.error(`${(err as Error).message}\n\n${USAGE}`);
  process.exit(2);
}
const db = createPrisma(config.DATABASE_URL, 2);
try {
  await run(db, config, parsed.command, parsed.values);
} catch (err) {
  if (err instanceof UsageError) {
    console.error(`${err.message}\n\n${USAGE}`);
    process.exitCode = 2;
  } else if (err instanceof ValidationError) {
    console.error(err.issues.map((issue) => issue.message).join("\n"));
    process.exitCode = 2;
  } else if (err instanceof AppError) {
    console.error(err.message);
    process.exitCode = 1;
  } else throw err;
} finally {
  await db.$disconnect();
}
