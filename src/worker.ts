import { setFlagsFromString } from "node:v8";
import { loadConfig, tracingOptions } from "./config.ts";
import { prismaFromConfig } from "./db/prisma.ts";
import { createRedis } from "./db/redis.ts";
import { DEMO_MODEL, demoScript } from "./dev/demo-script.ts";
import { startFakeLlm } from "./dev/fake-llm.ts";
import { portOf, serveMetrics } from "./http/metrics-scrape.ts";
import { startRuntime } from "./jobs/runtime.ts";
import { createLogger } from "./lib/logger.ts";
import { startTracing, stopTracing } from "./lib/telemetry.ts";

// A worker holding 1,000 waiting runs keeps about 90 MB live, but V8's default growth let its
// heap double between collections: peak RSS 600 MB, 410 MB with the heap grown by half
// instead (bench/HISTORY.md, "Thousands of waiting runs"). Set before anything allocates much.
setFlagsFromString("--heap-growing-percent=50");

const config = loadConfig();
// No active context in the worker (lib/telemetry.ts): its spans are passed explicitly.
await startTracing({ ...tracingOptions(config), activeContext: false });
const prisma = prismaFromConfig(config);
const connection = createRedis(config.REDIS_URL, "worker");
const log = createLogger(config.LOG_LEVEL);

// The demo without a real model: a scripted fake speaking the same protocol, in process.
const fake = !config.LLM_BASE_URL && config.DEMO_FAKE_LLM ? await startFakeLlm({ script: demoScript }) : null;
const runtimeConfig = fake
  ? { ...config, LLM_BASE_URL: fake.url, LLM_DEFAULT_MODEL: config.LLM_DEFAULT_MODEL ?? DEMO_MODEL }
  : config;
const runtime = await startRuntime({ config: runtimeConfig, prisma, connection, log });
// The worker has no HTTP server of its own: /metrics gets a small one, only when asked for.
const metrics =
  config.METRICS_PORT !== undefined && config.METRICS_TOKEN
    ? await serveMetrics({
        host: config.METRICS_HOST,
        port: config.METRICS_PORT,
        token: config.METRICS_TOKEN,
      })
    : null;
if (metrics) log.info(`metrics at http://${config.METRICS_HOST}:${portOf(metrics)}/metrics`);
log.info(
  { queuePrefix: config.QUEUE_PREFIX },
  `running (LLM ${fake ? `scripted demo model at ${fake.url}` : (config.LLM_BASE_URL ?? "not configured")})`,
);

let closing = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    if (closing) return;
    closing = true;
    metrics?.close();
    await runtime.close();
    await fake?.close();
    connection.disconnect();
    await prisma.$disconnect();
    await stopTracing();
    process.exit(0);
  });
}
