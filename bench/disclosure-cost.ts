// What the disclosure rule (agents/policy/labels.ts) adds to an agent's step. Not a test. Run:
// `npx tsx bench/disclosure-cost.ts` with Postgres up. An agent reads a studio's note and
// comments on it through the in-process markdown API, as a run does, BENCH_ITERATIONS times
// (2,000), alternating a context with a label and one without, so both see the same machine.
// Prints the p50 and p90 of each read and write both ways, and the difference: what the rule
// costs a step that reads and writes where it read (the usual step: no statement). Then the
// same write after the label took in a second studio, the case that does ask Postgres.
import { parseConfig } from "../src/config.ts";
import { createPrisma } from "../src/db/prisma.ts";
import { newId } from "../src/lib/ids.ts";
import { GRANTABLE } from "../src/services/agents/policy/capabilities.ts";
import { disclosure, storedFlow } from "../src/services/agents/policy/labels.ts";
import { readPage, runAction } from "../src/services/catalog/markdown-api.ts";
import { type Ctx, toActor } from "../src/services/registry/types.ts";
import { fmt, freshDatabase, percentile, seedStudio } from "./lib.ts";

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 2000);
const env = parseConfig(process.env);
const fresh = await freshDatabase(env.DATABASE_URL, "disclosure");
const db = createPrisma(fresh.url, 4);

const { tenant, person, studio } = await seedStudio(db, "owner", "Owner");
const agent = await db.user.create({
  data: {
    id: newId(),
    tenantId: tenant.id,
    handle: "scout",
    name: "Scout",
    kind: "subagent",
    parentId: person.id,
    agentConfig: { capabilities: [...GRANTABLE] },
  },
});
await db.studioMember.create({ data: { studioId: studio.id, userId: agent.id, tenantId: tenant.id } });
const other = await db.studio.create({
  data: {
    id: newId(),
    tenantId: tenant.id,
    handle: "vault",
    name: "Vault",
    inviteCode: newId(10),
    createdById: person.id,
    members: { create: [{ userId: person.id, tenantId: tenant.id, role: "admin" }] },
  },
});
const note = await db.note.create({
  data: { id: newId(), tenantId: tenant.id, studioId: studio.id, authorId: person.id, text: "Plans" },
});
const path = `/studios/general/notes/${note.id}`;

const plain = (): Ctx => ({ db, tenant, actor: toActor(agent) });
const labelled = (): Ctx => ({
  ...plain(),
  flow: storedFlow([{ studio: studio.id }], async () => undefined),
});

const times = { read: [[], []] as number[][], write: [[], []] as number[][] };
for (let i = 0; i < ITERATIONS; i++) {
  // Alternate which goes first, so neither always meets a warm cache.
  const order = i % 2 ? [0, 1] : [1, 0];
  for (const k of order) {
    const ctx = k ? labelled() : plain();
    let t0 = performance.now();
    await readPage(ctx, path);
    times.read[k]!.push(performance.now() - t0);
    t0 = performance.now();
    const r = await runAction(ctx, path, "add_comment", { text: `step ${i}` });
    times.write[k]!.push(performance.now() - t0);
    if (!r.ok) throw new Error(r.message);
  }
}

const p = (xs: number[], q: number) => fmt(percentile(xs, q), 3);
console.log(`disclosure rule, ${ITERATIONS} reads and writes each way (ms)`);
for (const kind of ["read", "write"] as const) {
  const [off, on] = times[kind] as [number[], number[]];
  const added = percentile(on, 50) - percentile(off, 50);
  console.log(
    `  ${kind.padEnd(5)} without label p50 ${p(off, 50)} p90 ${p(off, 90)} · with label p50 ${p(on, 50)} p90 ${p(on, 90)} · added p50 ${fmt(added, 3)}`,
  );
}
const stepAdded =
  percentile(times.read[1]!, 50) -
  percentile(times.read[0]!, 50) +
  (percentile(times.write[1]!, 50) - percentile(times.write[0]!, 50));
console.log(
  `  a step that reads then writes where it read: added p50 ${fmt(stepAdded, 3)} ms (target < 0.1)`,
);

// The rule's own work on a step, without the step around it (so without its noise): the
// page's sources joined to the label, and the write's check where it read (no statement).
const own: number[] = [];
const flow = storedFlow([{ studio: studio.id }], async () => undefined);
const sources = [{ studio: studio.id }];
for (let i = 0; i < ITERATIONS * 10; i++) {
  const t0 = performance.now();
  await flow.read(sources);
  await disclosure(db, tenant.id, agent.id, { studio: studio.id }, flow.label());
  own.push(performance.now() - t0);
}
console.log(
  `  the rule's own work on such a step: p50 ${fmt(percentile(own, 50) * 1000, 2)} µs p99 ${fmt(percentile(own, 99) * 1000, 2)} µs`,
);

// The label took in a second studio: the check asks Postgres who would be shown what.
const crossed: number[] = [];
for (let i = 0; i < ITERATIONS / 4; i++) {
  const t0 = performance.now();
  await disclosure(db, tenant.id, agent.id, { studio: studio.id }, [
    { studio: studio.id },
    { studio: other.id },
  ]);
  crossed.push(performance.now() - t0);
}
console.log(`  the check across two studios (one statement): p50 ${p(crossed, 50)} p90 ${p(crossed, 90)} ms`);

await db.$disconnect();
await fresh.drop();
