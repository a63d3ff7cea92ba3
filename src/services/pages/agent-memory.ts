// An agent's memory as its managers see it: the scratchpad it reads at the start of every
// run, where what it carries came from, and every write that made it (which run, at which
// step, or which manager), newest first. Managers only (loadAgent): the scratchpad holds
// what its runs read, and its managers are the readers of all of that.
import { loadAgent } from "../agents/core/ownership.ts";
import { parseLabel } from "../registry/audiences.ts";
import { markdownToHtml } from "../registry/html.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage } from "../registry/types.ts";
import { type EntryRow, scratchpadHistory } from "../scratchpad.ts";
import { agentCrumbs, pager, paging, when } from "./format.ts";
import { stepPath } from "./run-steps.ts";

export const entryAnchor = (id: string) => `entry-${id}`;

/** Where what a label says was read, in words (its studios by name); empty when nowhere but its own pages. */
async function placesOf(ctx: Ctx, raw: unknown, agentId: string): Promise<string[]> {
  const label = parseLabel(raw).filter((a) => !("managersOf" in a && a.managersOf === agentId));
  const ids = label.flatMap((a) => ("studio" in a ? [a.studio] : []));
  const studios = ids.length
    ? await ctx.db.studio.findMany({
        where: { id: { in: ids }, tenantId: ctx.tenant.id },
        select: { name: true },
      })
    : [];
  return [
    ...studios.map((s) => mdEscape(s.name)),
    ...(label.length > ids.length ? [`${label.length - ids.length} other source(s)`] : []),
  ];
}

/** Where what the scratchpad carries was read, in words: its studios by name. */
async function carried(ctx: Ctx, raw: unknown, agentId: string): Promise<string> {
  const places = await placesOf(ctx, raw, agentId);
  if (!places.length) return "It carries nothing from elsewhere: the agent may repeat it anywhere it writes.";
  return `It carries what its runs read in ${places.join(", ")}: writing it where others read waits for your approval. Editing or clearing it makes it your words.`;
}

/** What its tokens and MCP sessions have read (one label for all of them), and what clearing it decides. */
async function tokensRead(ctx: Ctx, raw: unknown, agentId: string): Promise<string> {
  const places = await placesOf(ctx, raw, agentId);
  const head = "## What its tokens read\n\nIts API tokens and MCP sessions share one label.";
  if (!places.length) return `${head} They have read nothing from elsewhere.`;
  return `${head} They have read in ${places.join(", ")}: what they write where others read waits for your approval. Clearing it is your decision to disclose that: they could then write it anywhere, unreviewed.`;
}

function entryBlock(handle: string, entry: EntryRow): Block {
  const who =
    entry.kind === "write"
      ? entry.runId
        ? `written by ${link(`run ${entry.runId}`, `/subagents/${handle}/runs/${entry.runId}`)}${entry.stepNumber ? ` at ${link(`step ${entry.stepNumber}`, stepPath(handle, entry.runId, entry.stepNumber))}` : ""}`
        : "written by the agent"
      : `${entry.kind === "clear" ? "cleared" : "edited"} by ${mdEscape(entry.author?.name ?? "a manager")}`;
  const markdown = `### ${when(entry.createdAt)} — ${who}\n\n${entry.kind === "clear" ? "_Cleared._" : quote(entry.text)}`;
  return {
    md: markdown,
    html: `<section id="${entryAnchor(entry.id)}">${markdownToHtml(markdown)}</section>`,
  };
}

export const agentMemoryPage = definePage({
  pattern: "/subagents/:handle/memory",
  actions: ["edit_scratchpad", "clear_scratchpad", "clear_agent_label"],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  async render(ctx, scope, query) {
    const agent = scope.agent;
    const paged = paging(query);
    const { entries, total } = await scratchpadHistory(ctx.db, agent.id, paged.skip, paged.take);
    const path = `/subagents/${agent.handle}/memory`;
    return {
      title: `Memory of ${agent.name}`,
      breadcrumb: [...agentCrumbs(agent), { label: "Memory" }],
      blocks: [
        {
          md: `## Scratchpad\n\nNotes ${mdEscape(agent.name)} keeps for itself with \`update_scratchpad\` and reads at the start of every run.\n\n${agent.scratchpad ? quote(agent.scratchpad) : "_Empty._"}\n\n${await carried(ctx, agent.scratchpadLabel, agent.id)}`,
        },
        { md: await tokensRead(ctx, agent.agentLabel, agent.id) },
        { md: `## History (${total})` },
        ...(entries.length ? entries.map((e) => entryBlock(agent.handle, e)) : [{ md: "_No writes yet._" }]),
        { md: pager(path, paged, total) },
      ],
    };
  },
});
