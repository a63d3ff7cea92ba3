// An agent's scratchpad and its history. The agent writes it (update_scratchpad) and reads it
// at the start of every run; its managers read it, with every write that made it, on
// /subagents/:handle/memory, and may edit or clear it. Each write adds a history row in the
// transaction that changes `users.scratchpad`, so the page never shows a text without its
// entry, nor an entry whose write rolled back.
import type { Db } from "../db/prisma.ts";
import { Prisma } from "../generated/prisma/client.ts";
import { newId } from "../lib/ids.ts";
import { withLabel } from "./agents/policy/labels.ts";
import type { Audience } from "./registry/types.ts";

export type ScratchpadKind = "write" | "edit" | "clear";

export interface ScratchpadWrite {
  tenantId: string;
  agentId: string;
  /** Who wrote it: the agent, or the manager editing or clearing it. */
  authorId: string;
  kind: ScratchpadKind;
  text: string;
  /** The run writing it (the agent's own write), when there is one. */
  runId?: string;
}

/**
 * Writes the scratchpad and its history row, in `tx`. The agent's own write adds the label
 * of what its run had read to what the scratchpad carried (memory cannot launder content).
 * A manager's edit or clear sets the label to nothing: the text is then the manager's own
 * words, written for the agent to act on like its description, which narrows nothing; a
 * manager is a reader of everything the agent read, and choosing what stays is the same
 * decision as approving a disclosure. The history keeps the label each text carried.
 */
export async function writeScratchpad(tx: Db, scratchpadWrite: ScratchpadWrite, runLabel: Audience[] = []) {
  const text = scratchpadWrite.kind === "clear" ? "" : scratchpadWrite.text.trim();
  const label =
    scratchpadWrite.kind === "write"
      ? withLabel(Prisma.sql`scratchpad_label`, runLabel)
      : Prisma.sql`'[]'::jsonb`;
  // One statement: the row's new text and label, and the entry that records them.
  await tx.$executeRaw`
    WITH pad AS (
      UPDATE users SET scratchpad = ${text}, scratchpad_label = ${label}
      WHERE id = ${scratchpadWrite.agentId} AND tenant_id = ${scratchpadWrite.tenantId}
      RETURNING scratchpad_label
    )
    INSERT INTO scratchpad_entries (id, tenant_id, agent_id, run_id, step_number, author_id, kind, text, label, created_at)
    SELECT ${newId()}, ${scratchpadWrite.tenantId}, ${scratchpadWrite.agentId}, ${scratchpadWrite.runId ?? null},
      (SELECT steps_count + 1 FROM subagent_task_runs WHERE id = ${scratchpadWrite.runId ?? null}),
      ${scratchpadWrite.authorId}, ${scratchpadWrite.kind}, ${text}, pad.scratchpad_label, clock_timestamp() AT TIME ZONE 'UTC'
    FROM pad`;
}

export interface EntryRow {
  id: string;
  runId: string | null;
  stepNumber: number | null;
  kind: string;
  text: string;
  createdAt: Date;
  author: { handle: string; name: string; kind: string } | null;
}

/** The history, newest first, a page of it. */
export async function scratchpadHistory(db: Db, agentId: string, skip: number, take: number) {
  const where = { agentId };
  const [rows, total] = await Promise.all([
    db.scratchpadEntry.findMany({
      where,
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      skip,
      take,
    }),
    db.scratchpadEntry.count({ where }),
  ]);
  const authors = await db.user.findMany({
    where: { id: { in: [...new Set(rows.map((r) => r.authorId))] } },
    select: { id: true, handle: true, name: true, kind: true },
  });
  const byId = new Map(authors.map((a) => [a.id, a]));
  const entries: EntryRow[] = rows.map((r) => ({ ...r, author: byId.get(r.authorId) ?? null }));
  return { entries, total };
}

/** The entries a run wrote, oldest first (the run page links them). */
export function entriesOfRun(db: Db, runId: string) {
  return db.scratchpadEntry.findMany({
    where: { runId },
    orderBy: { createdAt: "asc" },
    select: { id: true, stepNumber: true, text: true, createdAt: true },
  });
}
