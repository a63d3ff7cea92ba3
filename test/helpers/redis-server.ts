// A redis-server of a test's own, on a free port, for tests that stop Redis: the shared
// one is never stopped or flushed. Started and killed by pid.
import { type ChildProcess, spawn } from "node:child_process";
import { type AddressInfo, createServer } from "node:net";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export interface PrivateRedis {
  url: string;
  /** Kills the server (SIGKILL: as abrupt as a crash). */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = () =>
    new Promise<void>((resolve, reject) => {
      const c = spawn(
        "redis-server",
        ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      child = c;
      c.stdout!.on("data", (d: Buffer) => d.toString().includes("Ready to accept connections") && resolve());
      c.once("exit", (code) => reject(new Error(`redis-server exited with ${code}`)));
    });
  const kill = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill("SIGKILL");
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, kill, start };
}
