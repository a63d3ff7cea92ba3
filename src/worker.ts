import { loadConfig } from "./config.ts";
import { createPrisma } from "./db/prisma.ts";
import { createRedis } from "./db/redis.ts";
import { startRuntime } from "./jobs/runtime.ts";

const config = loadConfig();
const prisma = createPrisma(config.DATABASE_URL);
const connection = createRedis(config.REDIS_URL, "worker");
const log = (msg: string, err?: unknown) => console.error(`[worker] ${msg}`, err ?? "");

const runtime = await startRuntime({
  prisma,
  databaseUrl: config.DATABASE_URL,
  connection,
  prefix: config.QUEUE_PREFIX,
  log,
});
console.log(`[worker] running (queue prefix ${config.QUEUE_PREFIX})`);

let closing = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    if (closing) return;
    closing = true;
    await runtime.close();
    connection.disconnect();
    await prisma.$disconnect();
    process.exit(0);
  });
}
