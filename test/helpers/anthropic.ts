// Anthropic BYOK keys and runs as the Anthropic tests make them: a key whose stored URL is
// the fake Anthropic server's (as a real one stores https://api.anthropic.com/v1/), an
// agent set to use it, and a run started over the markdown API and waited for.
import type { FastifyInstance } from "fastify";
import { expect } from "vitest";
import type { FakeAnthropic } from "../../src/dev/fake-anthropic.ts";
import type { RunStatus } from "../../src/generated/prisma/client.ts";
import { createKey } from "../../src/services/money/keys.ts";
import { runIdOf } from "./agent-scripts.ts";
import { makeAgent } from "./agents.ts";
import { md, testPrisma, type World, waitFor } from "./app.ts";
import { fakeKey } from "./keys.ts";

const ENDED: RunStatus[] = ["completed", "failed", "cancelled", "timed_out"];

/** Alice's Anthropic key at the fake, and an agent of hers using it with `config` (its model, fallbacks). */
export async function anthropicAgent(
  w: World,
  fake: FakeAnthropic,
  handle: string,
  config: Record<string, unknown> = {},
) {
  const key = fakeKey("sk-ant-api03");
  const row = await createKey(testPrisma(), {
    tenantId: w.tenant.id,
    holder: { ownerId: w.alice.id },
    label: `Claude ${handle}`,
    provider: "anthropic",
    baseUrl: fake.url,
    key,
  });
  const agent = await makeAgent(w, w.alice, handle, {
    model: "claude-sonnet-4-5",
    api_key_id: row.id,
    ...config,
  });
  return { key, keyRow: row, agent };
}

/** Alice runs `task` on her agent `handle` and waits for it to end; returns the run. */
export async function runTask(app: FastifyInstance, w: World, handle: string, task = "Leave a note.") {
  const res = await md(app, w, w.alice, "POST", `/subagents/${handle}/run/actions/run_task`, { task });
  expect(res.statusCode, res.body).toBe(201);
  const id = runIdOf(String(res.headers.location));
  return waitFor(
    () => testPrisma().subagentTaskRun.findFirst({ where: { id, status: { in: ENDED } } }),
    20_000,
  );
}
