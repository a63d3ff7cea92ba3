// An agent's settings, versioned: every change of them is a numbered row (agent_versions) with
// who made it, what changed in words and the settings it left. One writer, `recordVersion`,
// called by the one place agent settings are saved (actions/agent-settings.ts saveConfig) and
// by the creation of an agent, in their transaction: a change and its version commit together.
import type { Db } from "../../../db/prisma.ts";
import type { Prisma } from "../../../generated/prisma/client.ts";
import { newId } from "../../../lib/ids.ts";
import { versionedSettings } from "./settings.ts";
import { changeWords, type Snapshot } from "./version-diff.ts";

/** Said of version 1 when an agent had settings before its versions were kept (the migration's words too). */
export const BASELINE_WORDS = "Its settings when versions began to be kept";

export interface NewVersion {
  tenantId: string;
  agentId: string;
  authorId: string;
  /** The stored configuration before the change; null: the agent is being created. */
  before: Prisma.JsonValue | null;
  after: Prisma.JsonValue;
  /** A restore: the version it brings back. */
  restoredFrom?: number;
}

/**
 * Writes the version a change made, and returns its number; null when the versioned settings
 * did not change (a key choice, a save of the same values). The caller holds the agent's row
 * lock (saveConfig), so numbers are taken one at a time. An agent made before versions, or
 * outside the actions (a test's fixture), gets its settings before the change as version 1
 * first: every change then has a version to be compared with and restored to.
 */
export async function recordVersion(tx: Db, change: NewVersion): Promise<number | null> {
  const after = versionedSettings(change.after);
  const before = change.before === null ? null : versionedSettings(change.before);
  if (before && JSON.stringify(before) === JSON.stringify(after)) return null;
  let latest = await latestVersion(tx, change.agentId);
  if (latest === null && before) {
    await insertVersion(tx, change, 1, [BASELINE_WORDS], before, null);
    latest = 1;
  }
  const number = (latest ?? 0) + 1;
  const words = before ? changeWords(before, after) : ["Created"];
  const restored = change.restoredFrom ? [`Restored version ${change.restoredFrom}`] : [];
  await insertVersion(tx, change, number, [...restored, ...words], after, change.authorId);
  return number;
}

async function insertVersion(
  tx: Db,
  change: NewVersion,
  number: number,
  words: string[],
  settings: Snapshot,
  authorId: string | null,
) {
  await tx.agentVersion.create({
    data: {
      id: newId(),
      tenantId: change.tenantId,
      agentId: change.agentId,
      number,
      authorId,
      changes: words,
      settings: settings as Prisma.InputJsonValue,
      restoredFrom: authorId ? (change.restoredFrom ?? null) : null,
    },
  });
}

export async function latestVersion(db: Db, agentId: string): Promise<number | null> {
  const latest = await db.agentVersion.findFirst({
    where: { agentId },
    orderBy: { number: "desc" },
    select: { number: true },
  });
  return latest?.number ?? null;
}

const withAuthor = { author: { select: { handle: true, name: true } } } as const;

/** A page of an agent's versions, newest first, and how many there are. */
export async function listVersions(db: Db, agentId: string, skip: number, take: number) {
  const [versions, total] = await Promise.all([
    db.agentVersion.findMany({
      where: { agentId },
      orderBy: { number: "desc" },
      skip,
      take,
      include: withAuthor,
    }),
    db.agentVersion.count({ where: { agentId } }),
  ]);
  return { versions, total };
}

export type VersionRow = Awaited<ReturnType<typeof listVersions>>["versions"][number];

/** One version and the one before it (null for the first), or null when there is no such version. */
export async function loadVersion(db: Db, agentId: string, number: number) {
  const rows = await db.agentVersion.findMany({
    where: { agentId, number: { in: [number - 1, number] } },
    orderBy: { number: "asc" },
    include: withAuthor,
  });
  const version = rows.find((row) => row.number === number);
  if (!version) return null;
  return { version, previous: rows.find((row) => row.number === number - 1) ?? null };
}

/** A stored version's settings, read through the schema as the agent's own are. */
export const settingsOf = (version: { settings: Prisma.JsonValue }): Snapshot =>
  versionedSettings(version.settings);
