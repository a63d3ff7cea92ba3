import { buildApp } from "./app.ts";
import { loadConfig, tracingOptions } from "./config.ts";
import { startTracing, stopTracing } from "./lib/telemetry.ts";

const config = loadConfig();
// Before the app is built: its request spans are registered only when tracing is on.
await startTracing(tracingOptions(config));
const app = await buildApp({ config });
app.server.headersTimeout = 30_000;
app.server.requestTimeout = 60_000;

let closing = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, "closing");
    await app.close();
    await stopTracing();
    process.exit(0);
  });
}

await app.listen({ host: config.HOST, port: config.PORT });
