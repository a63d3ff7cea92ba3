// Tenant isolation, owner-bound (issue 42): on tenant A's seeds (test/helpers/isolation-seeds.ts),
// an agent whose owner left A's studios, though the agent is still in them, and a studio's
// agent slipped into another studio, read every page the registry has, over the markdown API
// and MCP. Expected: the 404 their owner gets, and nothing of a studio they may not read.
// Its own A: seeding the agents and the owner's leaving are writes to A, which
// test/tenant-isolation.test.ts's no-write check must not see, and A's own actions there
// archive and remove what these agents read.
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pages } from "../src/services/catalog/catalog.ts";
import type { PageDef } from "../src/services/registry/types.ts";
import { buildTestApp, makeWorld } from "./helpers/app.ts";
import { excerpt, get, requestTally } from "./helpers/isolation-callers.ts";
import { actionUrl, concreteUrl } from "./helpers/isolation-params.ts";
import { seedVictim, type Victim } from "./helpers/isolation-seeds.ts";
import { leaks } from "./helpers/isolation-snapshot.ts";
import { mcpClient } from "./helpers/mcp.ts";
import {
  type OwnerBound,
  ownerBoundCases,
  ownerLeaves,
  searchesFor,
  seedOwnerBound,
} from "./helpers/owner-bound.ts";

let app: FastifyInstance;
let A: Victim;
const { count, report } = requestTally("tenant isolation, owner-bound");

afterAll(async () => {
  report();
  await app?.close();
});

describe("owner-bound: an agent reads no studio its owner is not in", () => {
  let bound: OwnerBound;
  let control: { agent: number; studioAgent: number; read: boolean[] };
  beforeAll(async () => {
    app = await buildTestApp();
    A = await seedVictim(await makeWorld("a"));
    bound = await seedOwnerBound(A);
    const vaultNote = concreteUrl("/studios/:studio/notes/:note", A.only);
    const agent = await get(app, bound.agent, vaultNote, "md");
    // What the sweep then looks for was there to read: the vault's note, its name, its mention.
    const before = await Promise.all(
      ["/whoami", "/notifications"].map((url) => get(app, bound.agent, url, "md")),
    );
    await ownerLeaves(A, bound);
    const studioAgent = await get(app, bound.studioAgent, vaultNote, "md");
    control = {
      agent: agent.statusCode,
      studioAgent: studioAgent.statusCode,
      read: [agent, ...before].map((res) => leaks(res, bound.needles.only, "").length > 0),
    };
    await app.listen({ port: 0, host: "127.0.0.1" });
  });

  it("control: before its owner left, the agent read the vault, its name and its mention; the vault's agent reads its own", () => {
    expect(control).toEqual({ agent: 200, studioAgent: 200, read: [true, true, true] });
  });

  /** Every read of the page (and of its actions' descriptions) by each agent, beside its owner's. */
  async function sweepPage(page: PageDef) {
    const failures: string[] = [];
    for (const { who, seed, needles } of ownerBoundCases(A, bound)) {
      const url = concreteUrl(page.pattern, seed);
      const urls = [url, ...page.actions.map((name) => actionUrl(url, name))];
      if (page.pattern === "/search") urls.push(...searchesFor(A));
      for (const target of urls) {
        const owner = await get(app, bound.owner, target, "md");
        const res = await get(app, who, target, "md");
        count(`owner-bound: ${who.label.split(" @")[0]} GET → ${res.statusCode}`);
        if (owner.statusCode === 404 && res.statusCode !== 404)
          failures.push(`${who.label} GET ${target}: its owner reads 404, it ${excerpt(res)}`);
        const leaked = leaks(res, needles, decodeURIComponent(target));
        if (leaked.length)
          failures.push(`${who.label} GET ${target}: reads ${leaked.join(", ")} — ${excerpt(res)}`);
      }
    }
    expect(failures).toEqual([]);
  }

  for (const page of pages) it(page.pattern, () => sweepPage(page));

  it("over MCP, read_page answers as the markdown API does, on every page", async () => {
    const failures: string[] = [];
    for (const caller of [bound.agent, bound.studioAgent]) {
      const client = await mcpClient(app, A.world, caller.token!);
      for (const { who, seed, needles } of ownerBoundCases(A, bound).filter((c) => c.who === caller))
        for (const page of pages) {
          const url = concreteUrl(page.pattern, seed);
          const owner = await get(app, bound.owner, url, "md");
          const read = (await client.callTool({
            name: "read_page",
            arguments: { path: url },
          })) as CallToolResult;
          const text = JSON.stringify(read.content);
          count(`owner-bound: ${who.label.split(" @")[0]} MCP read_page → ${read.isError ? "error" : "ok"}`);
          if (owner.statusCode === 404 && !read.isError) failures.push(`${who.label} MCP ${url}: read it`);
          const leaked = needles.filter((n) => !url.includes(n) && text.includes(n));
          if (leaked.length) failures.push(`${who.label} MCP ${url}: reads ${leaked.join(", ")}`);
        }
      await client.close();
    }
    expect(failures).toEqual([]);
  });
});
