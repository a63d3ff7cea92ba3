// Usage-dashboard benchmark (not a test). Run: `npx tsx bench/usage-dashboard.ts` with
// Postgres up. Seeds one tenant with 100,000 ledger rows (5 owners × 4 agents, 30 days),
// then times the dashboards over real HTTP with a Bearer token: an agent's page, an
// owner's /usage, a workspace admin's /usage (all 100,000 rows), in HTML and markdown.
import { Agent, request } from "node:http";
import { buildApp } from "../src/app.ts";
import { parseConfig } from "../src/config.ts";
import { createPrisma } from "../src/db/prisma.ts";
import { seedUsage } from "../src/dev/seed-usage.ts";
import { newId } from "../src/lib/ids.ts";
import { createApiToken } from "../src/services/tokens.ts";
import { fmt, freshDatabase, percentile } from "./lib.ts";

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 40);
const env = parseConfig(process.env);
const db = await freshDatabase(env.DATABASE_URL, "usage");
const prisma = createPrisma(db.url, 10);
try {
  const tenant = await prisma.tenant.create({
    data: { id: newId(), subdomain: `bench${newId(6)}`, name: "Bench" },
  });
  const owners: { id: string }[] = [];
  const agents: { id: string; ownerId: string; handle: string }[] = [];
  for (let o = 0; o < 5; o++) {
    const owner = await prisma.user.create({
      data: {
        id: newId(),
        tenantId: tenant.id,
        handle: `owner${o}`,
        name: `Owner ${o}`,
        kind: "person",
        tenantAdmin: o === 0,
      },
    });
    owners.push(owner);
    for (let a = 0; a < 4; a++) {
      const agent = await prisma.user.create({
        data: {
          id: newId(),
          tenantId: tenant.id,
          handle: `agent${o}x${a}`,
          name: `Agent ${o}.${a}`,
          kind: "subagent",
          parentId: owner.id,
          agentConfig: { cost_limit_usd: 1000 },
        },
      });
      agents.push({ id: agent.id, ownerId: owner.id, handle: agent.handle });
    }
  }
  const t0 = performance.now();
  await seedUsage(prisma, { tenantId: tenant.id, agents, rows: ROWS, days: 30 });
  await prisma.$executeRawUnsafe("ANALYZE");
  console.log(
    `seeded ${ROWS.toLocaleString("en-US")} ledger rows in ${fmt((performance.now() - t0) / 1000)} s`,
  );

  const app = await buildApp({
    config: { ...env, DATABASE_URL: db.url, LOG_LEVEL: "silent" },
    prisma,
    logger: false,
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const port = (app.server.address() as { port: number }).port;
  const admin = (await createApiToken(prisma, tenant.id, owners[0]!.id, "bench")).token;
  const owner = (await createApiToken(prisma, tenant.id, owners[1]!.id, "bench")).token;
  const keepAlive = new Agent({ keepAlive: true });
  const agent = agents.find((a) => a.ownerId === owners[1]!.id)!;

  const cases = [
    { name: "agent page (5k rows)", path: `/subagents/${agent.handle}/usage`, token: owner },
    { name: "owner /usage (20k rows)", path: "/usage", token: owner },
    { name: "admin /usage (100k rows)", path: "/usage", token: admin },
  ];
  console.log("\n| dashboard | format | p50 ms | p95 ms |\n|---|---|---|---|");
  for (const c of cases)
    for (const format of ["html", "markdown"] as const) {
      const get = () =>
        new Promise<number>((resolve, reject) => {
          const s = performance.now();
          // node:http, not fetch: fetch may not set Host, and the tenant comes from it.
          const req = request(
            {
              host: "127.0.0.1",
              port,
              path: c.path,
              headers: {
                host: `${tenant.subdomain}.localhost`,
                authorization: `Bearer ${c.token}`,
                accept: format === "html" ? "text/html" : "text/markdown",
              },
              agent: keepAlive,
            },
            (res) => {
              res.resume();
              res.on("end", () =>
                res.statusCode === 200
                  ? resolve(performance.now() - s)
                  : reject(new Error(`${c.path} answered ${res.statusCode}`)),
              );
            },
          );
          req.on("error", reject);
          req.end();
        });
      for (let i = 0; i < 5; i++) await get(); // warm: JIT, pool, plan cache
      const times: number[] = [];
      for (let i = 0; i < REQUESTS; i++) times.push(await get());
      console.log(
        `| ${c.name} | ${format} | ${fmt(percentile(times, 50))} | ${fmt(percentile(times, 95))} |`,
      );
    }
  await app.close();
} finally {
  await prisma.$disconnect();
  await db.drop();
}
