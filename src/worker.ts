import { loadConfig } from "./config.ts";
import { prismaFromConfig } from "./db/prisma.ts";
import { createRedis } from "./db/redis.ts";
import { DEMO_MODEL, demoScript } from "./dev/demo-script.ts";
import { startFakeLlm } from "./dev/fake-llm.ts";
import { startRuntime } from "./jobs/runtime.ts";

const config = loadConfig();
const prisma = prismaFromConfig(config);
const connection = createRedis(config.REDIS_URL, "worker");
const log = (msg: string, err?: unknown) => console.error(`[worker] ${msg}`, err ?? "");

// The demo without a real model: a scripted fake speaking the same protocol, in process.
const fake = !config.LLM_BASE_URL && config.DEMO_FAKE_LLM ? await startFakeLlm({ script: demoScript }) : null;
const runtimeConfig = fake
  ? { ...config, LLM_BASE_URL: fake.url, LLM_DEFAULT_MODEL: config.LLM_DEFAULT_MODEL ?? DEMO_MODEL }
  : config;
const runtime = await startRuntime({ config: runtimeConfig, prisma, connection, log });
console.log(
  `[worker] running (queue prefix ${config.QUEUE_PREFIX}; LLM ${fake ? `scripted demo model at ${fake.url}` : (config.LLM_BASE_URL ?? "not configured")})`,
);

let closing = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    if (closing) return;
    closing = true;
    await runtime.close();
    await fake?.close();
    connection.disconnect();
    await prisma.$disconnect();
    process.exit(0);
  });
}
