// bin/demo's side ports (bin/lib/ports.sh): a chosen port is used or refused, never moved;
// an unchosen one is the first free port of its range, so two demos never share an inbox.
import { execFile } from "node:child_process";
import { createServer, type Server } from "node:net";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "./helpers/ports.ts";

const run = promisify(execFile);
const servers: Server[] = [];
afterAll(() => Promise.all(servers.map((server) => new Promise((done) => server.close(done)))));

async function hold(port: number) {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((done) => server.listen(port, "127.0.0.1", done));
}

const pick = (env: Record<string, string>, first: number, last: number) =>
  run("bash", ["-c", `source bin/lib/ports.sh && pick_port DEMO_MAIL_WEB_PORT ${first} ${last}`], {
    env: { PATH: process.env.PATH ?? "", ...env },
  });

describe("the demo's inbox ports", () => {
  it("skips a taken port of the range", async () => {
    const first = await freePort();
    await hold(first);
    const { stdout } = await pick({}, first, first + 20);
    const port = Number(stdout.trim());
    expect(port).toBeGreaterThan(first);
    expect(port).toBeLessThanOrEqual(first + 20);
  });

  it("uses the port it is given, and refuses a taken one, saying so", async () => {
    const chosen = await freePort();
    expect((await pick({ DEMO_MAIL_WEB_PORT: String(chosen) }, 8025, 8099)).stdout.trim()).toBe(
      String(chosen),
    );
    await hold(chosen);
    await expect(pick({ DEMO_MAIL_WEB_PORT: String(chosen) }, 8025, 8099)).rejects.toMatchObject({
      stderr: expect.stringContaining(`DEMO_MAIL_WEB_PORT=${chosen} is already in use`),
    });
    await expect(pick({ DEMO_MAIL_WEB_PORT: "web" }, 8025, 8099)).rejects.toMatchObject({
      stderr: expect.stringContaining("is not a port number"),
    });
  });
});
