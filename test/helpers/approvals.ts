// Helpers for the approval and agent-settings tests: a model that works through a plan of
// actions, the pending rows it leaves, and the owner's review over the markdown API.
import type { FastifyInstance } from "fastify";
import { expect } from "vitest";
import type { ChatRequest, FakeReply } from "../../src/dev/fake-llm.ts";
import type { PendingStatus } from "../../src/generated/prisma/client.ts";
import { GRANTABLE } from "../../src/services/agents/policy/capabilities.ts";
import { requestsFor, runIdOf, userPrompt } from "./agent-scripts.ts";
import { type AgentEnv, makeAgent, tool, waitForRun } from "./agents.ts";
import { act, makeWorld, md, type Person, testPrisma, type World, waitFor } from "./app.ts";

export interface PlanStep {
  path: string;
  action: string;
  params: Record<string, unknown>;
  reason?: string;
}

/** The history line a resumed run gets about a review, as the model reads it. */
export const REVIEW_LINE = /your owner's review of #\w+ \(\w+\): .*/;

/**
 * A model that works through `plan`: for each step it opens the step's page and executes
 * the action there (denied, queued or done, it moves on), then finishes with the last
 * review line it was told about, or "done".
 */
export function planScript(plan: PlanStep[]) {
  return (req: ChatRequest): FakeReply => {
    const prompt = userPrompt(req);
    const next = plan[(prompt.match(/^\d+\. execute /gm) ?? []).length];
    if (!next) return tool("finish", { message: REVIEW_LINE.exec(prompt)?.[0] ?? "done" });
    if (/# Current page: (\S+)/.exec(prompt)?.[1] !== next.path) return tool("navigate", { path: next.path });
    return tool("execute_action", {
      action: next.action,
      params: next.params,
      ...(next.reason && { reason: next.reason }),
    });
  };
}

export const pendingOf = (agentId: string) =>
  testPrisma().agentPendingAction.findMany({ where: { agentId }, orderBy: { createdAt: "asc" } });

export const pendingRow = (id: string) =>
  testPrisma().agentPendingAction.findUniqueOrThrow({ where: { id } });

/** The agent's first pending action in `status`, once there is one. */
export const waitPending = (agentId: string, status: PendingStatus = "pending") =>
  waitFor(() => testPrisma().agentPendingAction.findFirst({ where: { agentId, status } }), 10_000);

/** The pending action once it reached `status`. */
export const waitStatus = (id: string, status: PendingStatus) =>
  waitFor(() => testPrisma().agentPendingAction.findFirst({ where: { id, status } }), 10_000);

/** `approve_action` / `reject_action` over the markdown API, on /approvals unless `at` says otherwise. */
export function review(
  app: FastifyInstance,
  w: World,
  who: Person,
  action: "approve_action" | "reject_action",
  body: Record<string, unknown>,
  at = "/approvals",
) {
  return md(app, w, who, "POST", `${at}/actions/${action}`, body);
}

/**
 * A set_capabilities body: the grantable actions in `on` allowed, those in `approval` allowed
 * after review, the rest not; reviews as given (the defaults otherwise).
 */
export const permissions = (
  on: readonly string[],
  o: { approval?: readonly string[]; mode?: "continue" | "wait"; expiry?: number } = {},
): Record<string, unknown> => ({
  ...Object.fromEntries(
    GRANTABLE.map((a) => [a, o.approval?.includes(a) ? "approval" : on.includes(a) ? "on" : "off"]),
  ),
  approval_mode: o.mode ?? "continue",
  approval_expiry_hours: o.expiry ?? 24,
});

/** The agent's stored agent_config. */
export async function configOf(agentId: string): Promise<Record<string, unknown>> {
  const u = await testPrisma().user.findUniqueOrThrow({ where: { id: agentId } });
  return (u.agentConfig ?? {}) as Record<string, unknown>;
}

/** Events of `type` about `subjectId`. */
export const eventsAbout = (subjectId: string, type: string) =>
  testPrisma().event.count({ where: { subjectId, type } });

export const TASK = "Summarize the week for the team";
export const REASON = "The team asked for a written summary";
export const NOTE = { title: "Findings", text: "All good" };
/** Post the findings note in the studio, saying why. */
export const noteStep: PlanStep = {
  path: "/studios/general",
  action: "create_note",
  params: NOTE,
  reason: REASON,
};

export const notesBy = (authorId: string) => testPrisma().note.findMany({ where: { authorId } });

/** The app and the workers of a test file. */
export interface Harness {
  app: () => FastifyInstance;
  env: () => AgentEnv;
}

/** A world with alice's agent @scout (config as given) and a note by alice; the fake LLM follows `plan`. */
export async function setupAgent(
  h: Harness,
  config: Record<string, unknown>,
  plan: (notePath: string) => PlanStep[],
) {
  const w = await makeWorld();
  const scout = await makeAgent(w, w.alice, "scout", config);
  const note = await act(w, w.alice, "/studios/general", "create_note", {
    title: "Plan",
    text: "What next?",
  });
  h.env().llm.setScript(planScript(plan(note.location)));
  return { w, scout, notePath: note.location };
}

/** Alice gives @scout a task over the markdown API; returns the run's id. */
export async function runTask(h: Harness, w: World, task = TASK) {
  const res = await md(h.app(), w, w.alice, "POST", "/subagents/scout/run/actions/run_task", { task });
  expect(res.statusCode).toBe(201);
  return runIdOf(String(res.headers.location));
}

/** A run that asked to post the findings note, which needs approval: completed (continue) or waiting (wait mode). */
export async function queued(h: Harness, config: Record<string, unknown> = {}) {
  const { w, scout } = await setupAgent(h, { requires_approval: ["create_note"], ...config }, () => [
    noteStep,
  ]);
  await runTask(h, w);
  const wait = config.approval_mode === "wait";
  const run = await waitForRun(scout.id, wait ? (s) => s === "waiting" : undefined);
  return { w, scout, run, p: await waitPending(scout.id) };
}

/** The run once it ended, and every prompt the model got in this world. */
export async function resumed(h: Harness, w: World, agentId: string) {
  const run = await waitForRun(agentId);
  return { run, prompts: requestsFor(h.env(), w).map((r) => userPrompt(r.body)) };
}
