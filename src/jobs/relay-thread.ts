// The event relay on a thread of its own in the worker process. The worker's event and
// agent jobs keep its event loop busy under load, and each step of a batch (the
// notification, the claim, Redis, the commit) waited behind them: at 150 commits/s with
// the worker behind, relay lag p50 / p99 was 43 / 158 ms in the worker's loop and
// 10 / 51 ms in a loop of its own (bench/HISTORY.md). The thread loads only the relay,
// pg and BullMQ, not Prisma.
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { createRedis } from "../db/redis.ts";
import { startEventRelay } from "./event-relay.ts";
import { closeQueues, createQueues } from "./queues.ts";

export interface RelayThreadOptions {
  databaseUrl: string;
  redisUrl: string;
  queuePrefix: string;
  log?: (msg: string, err?: unknown) => void;
}

type FromThread = { ready: true } | { log: string; err?: unknown };

// Compiled (dist/, `npm run build`), this module is JavaScript and the thread loads it as it
// is; run from source, the thread must register the TypeScript loader first, and that costs
// the thread about 15 MB and a loader thread of its own.
const threadEntry = import.meta.url.endsWith(".ts")
  ? new URL("./relay-thread-boot.mjs", import.meta.url)
  : new URL(import.meta.url);

/** Starts the relay thread; restarts it if it dies, as the outbox must not stop publishing. */
export function startRelayThread(relayThreadOptions: RelayThreadOptions) {
  const { log, ...data } = relayThreadOptions;
  let thread: Worker;
  let stopping = false;
  let started = false; // a thread that never got going is the caller's failure, not restarted
  let restart: ReturnType<typeof setTimeout> | undefined;

  function spawn(): Promise<void> {
    thread = new Worker(threadEntry, {
      workerData: { eventRelay: data },
    });
    const worker = thread;
    return new Promise<void>((resolve, reject) => {
      worker.on("message", (fromThread: FromThread) => {
        if ("ready" in fromThread) {
          started = true;
          resolve();
        } else log?.(fromThread.log, fromThread.err);
      });
      worker.on("error", (err) => {
        reject(err);
        log?.("event relay thread failed", err);
      });
      worker.on("exit", (code) => {
        reject(new Error(`the event relay thread exited with ${code}`));
        if (stopping || !started) return;
        log?.(`event relay thread exited with ${code}, restarting it`);
        restart = setTimeout(() => void spawn().catch(() => undefined), 1000);
      });
    });
  }

  const ready = spawn();
  return {
    ready,
    async stop() {
      stopping = true;
      clearTimeout(restart);
      const exited = new Promise((resolve) => thread.once("exit", resolve));
      thread.postMessage("stop");
      const kill = setTimeout(() => void thread.terminate(), 10_000);
      await exited;
      clearTimeout(kill);
    },
  };
}

async function runThread(options: Omit<RelayThreadOptions, "log">) {
  const port = parentPort!;
  const connection = createRedis(options.redisUrl, "worker");
  const log = (msg: string, err?: unknown) => {
    try {
      port.postMessage({ log: msg, err });
    } catch {
      port.postMessage({ log: msg, err: String(err) }); // not structured-cloneable
    }
  };
  // The thread's queues say an outage through the parent's log, as the relay does.
  const queues = createQueues(connection, options.queuePrefix, {
    warn: (fields, message) => log(message, (fields as { error?: string }).error ?? "Redis error"),
    info: (_fields, message) => log(message),
  });
  const relay = startEventRelay({ databaseUrl: options.databaseUrl, queues, log });
  port.on("message", async (message) => {
    if (message !== "stop") return;
    await relay.stop();
    await closeQueues(queues);
    connection.disconnect();
    process.exit(0); // in a worker thread: ends this thread only
  });
  await relay.ready;
  port.postMessage({ ready: true });
}

if (!isMainThread && workerData?.eventRelay) await runThread(workerData.eventRelay);
