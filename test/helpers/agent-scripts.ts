// Scripted models and observers for the agent e2e tests: what the fake LLM answers,
// which of its requests belong to a test's tenant, when an event has been processed,
// and whether the client hung up on the fake server.
import dc from "node:diagnostics_channel";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChatRequest, FakeReply, Recorded } from "../../src/dev/fake-llm.ts";
import { type AgentEnv, tool } from "./agents.ts";
import { testPrisma, type World, waitFor } from "./app.ts";

/** The user message of a request: task, steps so far, current page, feedback. */
export const userPrompt = (req: ChatRequest): string =>
  req.messages
    .filter((m) => m.role === "user")
    .map((m) => m.content ?? "")
    .join("\n");

export const systemOf = (req: ChatRequest): string =>
  req.messages
    .filter((m) => m.role === "system")
    .map((m) => m.content ?? "")
    .join("\n");

/** The handle of the agent a request is for (the system prompt names it). */
export const agentOf = (req: ChatRequest): string =>
  /\(@([\w-]+)\), an AI agent/.exec(systemOf(req))?.[1] ?? "";

/** The requests the fake LLM received for this world's tenant (the system prompt names the workspace). */
export function requestsFor(env: AgentEnv, w: World): Recorded[] {
  return env.llm.requests.filter((r) => systemOf(r.body).includes(`in the ${w.tenant.name} workspace`));
}

/**
 * A model that answers its trigger: opens the page its task points at, posts one comment
 * (`say(handle)`; a reply when the task names a comment), then finishes. `null` from
 * `say` finishes at once.
 */
/** A model that answers its first call with a 500 (the client retries it), then as `plan`. */
export function failingOnce(plan: (req: ChatRequest) => FakeReply) {
  let failed = false;
  return (req: ChatRequest): FakeReply => {
    if (failed) return plan(req);
    failed = true;
    return { status: 500, content: "upstream hiccup" };
  };
}

export function respondScript(say: (handle: string) => string | null = () => null) {
  return (req: ChatRequest): FakeReply => {
    const prompt = userPrompt(req);
    const text = say(agentOf(req));
    const target = / at (\/studios\/[\w/-]+)\.\n/.exec(prompt)?.[1];
    const page = /# Current page: (\S+)/.exec(prompt)?.[1];
    if (text === null || !target || prompt.includes("execute add_comment("))
      return tool("finish", { message: "done" });
    if (page !== target) return tool("navigate", { path: target });
    const id = /The comment \(id `(\w+)`\)/.exec(prompt)?.[1];
    return tool("execute_action", { action: "add_comment", params: { text, ...(id && { reply_to: id }) } });
  };
}

export interface Processed {
  notified: number;
  runs: string[];
}

/** Waits until the events worker has finished with the `type` event about `subjectId`, and returns what it did. */
export async function processed(
  env: AgentEnv,
  subjectId: string,
  type = "comment.created",
): Promise<Processed> {
  const e = await waitFor(() => testPrisma().event.findFirst({ where: { subjectId, type } }));
  return waitFor(async () => {
    const job = await env.runtime.queues.events.getJob(e.id);
    return job && (await job.isCompleted()) ? (job.returnvalue as Processed) : null;
  }, 10_000);
}

/** The comment `author` wrote with exactly this text. */
export function commentBy(authorId: string, text: string) {
  return waitFor(() => testPrisma().comment.findFirst({ where: { authorId, text } }));
}

export const stepsOf = (runId: string) =>
  testPrisma().subagentTaskRunStep.findMany({ where: { runId }, orderBy: { number: "asc" } });

export const runById = (id: string) => testPrisma().subagentTaskRun.findUniqueOrThrow({ where: { id } });

export const runIdOf = (location: string) => location.split("/").pop()!;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Exchange {
  url: string;
  /** The connection closed. */
  closed: boolean;
  /** The fake wrote a whole response before it closed (false: the client hung up on it). */
  answered: boolean;
}

/**
 * Every HTTP exchange the fake LLM's server sees, through Node's `http.server.request.start`
 * diagnostics channel (the fake runs in this process): tells whether a request that
 * never got an answer was abandoned by the client, i.e. its socket closed.
 */
export function watchLlm(env: AgentEnv) {
  const port = Number(new URL(env.llm.url).port);
  const exchanges: Exchange[] = [];
  const onStart = (msg: unknown) => {
    const { request, response, server } = msg as {
      request: IncomingMessage;
      response: ServerResponse;
      server: Server;
    };
    if ((server.address() as AddressInfo | null)?.port !== port) return;
    const x: Exchange = { url: request.url ?? "", closed: false, answered: false };
    response.on("close", () => {
      x.closed = true;
      x.answered = response.writableFinished;
    });
    exchanges.push(x);
  };
  dc.subscribe("http.server.request.start", onStart);
  return { exchanges, stop: () => dc.unsubscribe("http.server.request.start", onStart) };
}
