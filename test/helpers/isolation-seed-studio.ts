// Seeding for the isolation sweep: people beyond makeWorld's three, one studio's content
// (a note, a decision, a commitment, their comments, a token and its audit trail), and the
// events turned into notifications as the worker would.
import { newId } from "../../src/lib/ids.ts";
import { notifyForEvent } from "../../src/services/notifications.ts";
import { hashPassword } from "../../src/services/passwords.ts";
import { act, PASSWORD, type Person, testPrisma, type World } from "./app.ts";

let hash: Promise<string> | undefined;

/** A person in `world` beyond makeWorld's three, with a password and a live token. */
export async function addPerson(world: World, handle: string, name: string): Promise<Person> {
  const db = testPrisma();
  hash ??= hashPassword(PASSWORD);
  const email = `${handle}@${world.tenant.subdomain}.test`;
  const u = await db.user.create({
    data: {
      id: newId(),
      tenantId: world.tenant.id,
      handle,
      name,
      email,
      kind: "person",
      passwordHash: await hash,
    },
  });
  const person: Person = { id: u.id, handle, name, email, token: "" };
  // `manage`: the suite runs every action with it, tokens and keys included.
  const made = await act(world, person, `/u/${handle}/settings/tokens`, "create_api_token", {
    name: "auth",
    scope: "manage",
  });
  return { ...person, token: made.secret! };
}

export async function must<T>(p: Promise<T | null>, what: string): Promise<T> {
  const v = await p;
  if (!v) throw new Error(`seed: ${what} not found`);
  return v;
}

/**
 * Turns every event of the tenant into notifications, as the worker would, and marks
 * them published. All of them, published or not: another test file's relay serves every
 * tenant of the database and may have taken some, and its worker could otherwise write
 * A's notifications later, in the middle of the no-write check. Notifying is idempotent.
 */
export async function deliverEvents(tenantId: string): Promise<void> {
  const db = testPrisma();
  const events = await db.event.findMany({ where: { tenantId }, orderBy: { createdAt: "asc" } });
  for (const e of events) await notifyForEvent(db, e.id);
  await db.event.updateMany({ where: { tenantId, publishedAt: null }, data: { publishedAt: new Date() } });
}

export async function seedStudio(
  w: World,
  label: string,
  actor: Person,
  other: Person,
  studioHandle: string,
  mark: string,
  findme: string,
) {
  const db = testPrisma();
  const base = `/studios/${studioHandle}`;
  const studio = await must(
    db.studio.findFirst({ where: { tenantId: w.tenant.id, handle: studioHandle } }),
    "studio",
  );
  const s = `${mark} ${label}`;
  const id = (location: string) => location.split("/").pop()!;
  const note = id(
    (
      await act(w, actor, base, "create_note", {
        title: `Note ${s}`,
        text: `Private note ${s}: ${findme}, see @${other.handle}`,
      })
    ).location,
  );
  await act(w, other, `${base}/notes/${note}`, "add_comment", { text: `Comment ${s} for @${actor.handle}` });
  await act(w, other, `${base}/notes/${note}`, "confirm_read", {});
  const decision = id(
    (
      await act(w, actor, base, "create_decision", {
        question: `Question ${s}?`,
        description: `Context ${s}: ${findme}`,
        options: `Option one ${s}\nOption two ${s}`,
      })
    ).location,
  );
  const options = await db.decisionOption.findMany({
    where: { decisionId: decision },
    orderBy: { title: "asc" },
  });
  const [one, two] = [options[0]!.id, options[1]!.id];
  await act(w, actor, `${base}/decisions/${decision}`, "vote", {
    option_id: one,
    accept: true,
    prefer: true,
  });
  await act(w, other, `${base}/decisions/${decision}`, "vote", {
    option_id: two,
    accept: true,
    prefer: false,
  });
  await act(w, other, `${base}/decisions/${decision}`, "add_comment", { text: `Decision comment ${s}` });
  const commitment = id(
    (
      await act(w, actor, base, "create_commitment", {
        title: `Commitment ${s}`,
        critical_mass: 3,
        description: `Promise ${s}: ${findme}`,
      })
    ).location,
  );
  await act(w, other, `${base}/commitments/${commitment}`, "join_commitment", {});
  await act(w, other, `${base}/commitments/${commitment}`, "add_comment", {
    text: `Commitment comment ${s}`,
  });
  const tokens = `/u/${actor.handle}/settings/tokens`;
  const secret = (await act(w, actor, tokens, "create_api_token", { name: `Token ${s}` })).secret!;
  const tokenRow = await must(
    db.apiToken.findFirst({ where: { userId: actor.id, name: `Token ${s}` } }),
    "api token",
  );
  // What the token did, as the audit trail records it: a call over the markdown API, one over MCP.
  const call = { tenantId: w.tenant.id, tokenId: tokenRow.id, actorId: actor.id, status: 200, latencyMs: 12 };
  await db.apiCall.createMany({
    data: [
      {
        ...call,
        id: newId(),
        method: "POST",
        page: `${base}/notes/${note}`,
        action: "add_comment",
        createdAt: new Date(),
      },
      {
        ...call,
        id: newId(),
        method: "POST",
        tool: "read_page",
        page: `${base}/notes/${note}`,
        createdAt: new Date(),
      },
    ],
  });
  const comment = async (subjectId: string) =>
    (await must(db.comment.findFirst({ where: { subjectId } }), "comment")).id;
  return {
    label,
    owner: "A" as const,
    actor,
    other,
    studio: { id: studio.id, handle: studio.handle, inviteCode: studio.inviteCode },
    note,
    decision,
    option: one,
    commitment,
    comments: {
      note: await comment(note),
      decision: await comment(decision),
      commitment: await comment(commitment),
    },
    token: { id: tokenRow.id, secret },
  };
}
