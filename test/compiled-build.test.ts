// The compiled build (`npm run build`, dist/) is what production runs: the server renders its
// pages from the templates copied beside it, and the worker, with its relay on a thread that
// loads the compiled module without tsx, takes a run from its commit to its last action.
import { execFile } from "node:child_process";
import http from "node:http";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../src/dev/fake-llm.ts";
import { makeAgent, runsOf } from "./helpers/agents.ts";
import { fileDatabaseUrl, makeWorld, waitFor } from "./helpers/app.ts";
import { noteEachScript, notesPerAgent, queueRunsFor } from "./helpers/faults.ts";
import { endWorkers, spawnWeb, spawnWorker } from "./helpers/workers.ts";

const prefix = `${inject("queuePrefix")}-compiled`;
let llm: FakeLlm;

beforeAll(async () => {
  await promisify(execFile)("npm", ["run", "--silent", "build"], { timeout: 120_000 });
  llm = await startFakeLlm({ script: noteEachScript(0) });
}, 150_000);
afterAll(async () => {
  await endWorkers(prefix);
  await llm?.close();
});

function get(port: number, host: string, path: string, headers: Record<string, string>) {
  return new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path, headers: { host, ...headers } }, (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () =>
          resolve({ status: res.statusCode!, type: String(res.headers["content-type"]), body }),
        );
      })
      .on("error", reject);
  });
}

describe("the compiled build", { timeout: 60_000 }, () => {
  it("serves a studio's page as HTML, in the layout, and as markdown", async () => {
    const web = await spawnWeb({ databaseUrl: fileDatabaseUrl(), prefix, compiled: true });
    await web.ready;
    const w = await makeWorld();
    const auth = { authorization: `Bearer ${w.alice.token}` };
    const html = await get(web.port, w.host, "/studios/general", { ...auth, accept: "text/html" });
    expect([html.status, html.type]).toEqual([200, "text/html; charset=utf-8"]);
    expect(html.body).toMatch(/^<!doctype html>/i);
    expect(html.body).toContain("General");
    const md = await get(web.port, w.host, "/studios/general.md", auth);
    expect([md.status, md.type]).toEqual([200, "text/markdown; charset=utf-8"]);
    expect(md.body).toContain("## Actions");
  });

  it("runs an agent's run to its note, through the relay's thread", async () => {
    const worker = spawnWorker({ databaseUrl: fileDatabaseUrl(), llmUrl: llm.url, prefix, compiled: true });
    await worker.ready;
    const w = await makeWorld();
    const agent = await makeAgent(w, w.alice, "built");
    await queueRunsFor(w, [agent]);
    const [run] = await waitFor(async () => {
      const runs = await runsOf(agent.id);
      return runs[0]?.completedAt ? runs : null;
    }, 30_000);
    expect([run!.status, run!.error]).toEqual(["completed", null]);
    expect(await notesPerAgent(w, [agent])).toEqual([1]);
    expect(worker.output()).not.toMatch(/error|tsx/i);
  });
});
