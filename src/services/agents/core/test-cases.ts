// An agent's test cases: a run's trigger kept to be run again (its task, how it woke, whose view
// it acted within, what it was labelled) with what its managers expect of a run of it
// (expectations.ts). The agent's, as its versions are: pages and actions reach them only
// through an agent they resolved for its managers (ownership.ts loadAgent, mayManage).
import type { Db } from "../../../db/prisma.ts";
import type { Prisma, SubagentTaskRun } from "../../../generated/prisma/client.ts";
import { newId } from "../../../lib/ids.ts";
import type { Expectation } from "./expectations.ts";

export const casesPath = (handle: string) => `/subagents/${handle}/cases`;
export const casePath = (handle: string, id: string) => `${casesPath(handle)}/${id}`;

export interface NewCase {
  tenantId: string;
  agentId: string;
  createdById: string;
  name: string;
  expectations: Expectation[];
}

/**
 * Saves a run as a case. Its label is the run's as it is: the label a run started with is not
 * kept apart (it only grows), and a replay carries the whole of it too (triggers/replay.ts), so
 * a run of the case reads within no more than the original did.
 */
export async function saveCase(
  tx: Db,
  run: Pick<SubagentTaskRun, "id" | "task" | "triggerKind" | "viewerIds" | "label">,
  values: NewCase,
) {
  return tx.agentTestCase.create({
    data: {
      id: newId(),
      ...values,
      fromRunId: run.id,
      task: run.task,
      triggerKind: run.triggerKind,
      viewerIds: run.viewerIds,
      label: run.label as Prisma.InputJsonValue,
      expectations: values.expectations as Prisma.InputJsonValue,
    },
  });
}

const withAuthor = { createdBy: { select: { handle: true, name: true } } } as const;

/** A page of an agent's cases, newest first, and how many there are. */
export async function listCases(db: Db, agentId: string, skip: number, take: number) {
  const [cases, total] = await Promise.all([
    db.agentTestCase.findMany({
      where: { agentId },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      skip,
      take,
      include: withAuthor,
    }),
    db.agentTestCase.count({ where: { agentId } }),
  ]);
  return { cases, total };
}

export type CaseRow = Awaited<ReturnType<typeof listCases>>["cases"][number];

/** One of the agent's cases, or null: an id of another agent's (or workspace's) case is no case of this one. */
export function loadCase(db: Db, agentId: string, id: string) {
  return db.agentTestCase.findFirst({ where: { id, agentId }, include: withAuthor });
}

/** Replaces a case's expectations; false when the agent has no such case. */
export async function setExpectations(tx: Db, agentId: string, id: string, expectations: Expectation[]) {
  const changed = await tx.agentTestCase.updateMany({
    where: { id, agentId },
    data: { expectations: expectations as Prisma.InputJsonValue, updatedAt: new Date() },
  });
  return changed.count > 0;
}

/** Deletes a case; its name, or null when the agent has no such case. */
export async function deleteCase(tx: Db, agentId: string, id: string): Promise<string | null> {
  const found = await tx.agentTestCase.findFirst({ where: { id, agentId }, select: { name: true } });
  if (!found) return null;
  await tx.agentTestCase.deleteMany({ where: { id, agentId } });
  return found.name;
}
