// Shared setup for the schedule tests: an owner's agent, a poster for its schedules
// page, and a way to make a schedule due (its next fire time moved into the past).
import type { FastifyInstance } from "fastify";
import { makeAgent } from "./agents.ts";
import { makeWorld, md, type Person, testPrisma, type World } from "./app.ts";

export const schedulesPath = (handle: string) => `/subagents/${handle}/schedules`;

export async function scheduleWorld(app: FastifyInstance, handle = "scout") {
  const w = await makeWorld();
  const agent = await makeAgent(w, w.alice, handle);
  const post = (action: string, body: Record<string, unknown>, who: Person = w.alice) =>
    md(app, w, who, "POST", `${schedulesPath(handle)}/actions/${action}`, body);
  return { w, agent, post };
}

/** Adds a schedule through the markdown API; returns its row. */
export async function addSchedule(
  app: FastifyInstance,
  w: World,
  handle: string,
  body: Record<string, unknown>,
) {
  const res = await md(app, w, w.alice, "POST", `${schedulesPath(handle)}/actions/add_schedule`, body);
  if (res.statusCode !== 201) throw new Error(`add_schedule: ${res.statusCode}\n${res.body}`);
  const id = String(res.headers.location).split("#")[1]!;
  return testPrisma().agentSchedule.findUniqueOrThrow({ where: { id } });
}

/** Makes a schedule due as if its workers had been down since `ago` ms. */
export async function makeDue(id: string, agoMs: number) {
  await testPrisma().agentSchedule.update({
    where: { id },
    data: { nextFireAt: new Date(Date.now() - agoMs) },
  });
}
