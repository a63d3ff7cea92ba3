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

/** Where what the scratchpad carries was read, in words: its studios by name. */
async function carried(ctx: Ctx, raw: unknown, agentId: string): Promise<string> {
  const label = parseLabel(raw).filter((a) => !("managersOf" in a && a.managersOf === agentId));
  if (!label.length) return "It carries nothing from elsewhere: the agent may repeat it anywhere it writes.";
  const ids = label.flatMap((a) => ("studio" in a ? [a.studio] : []));
  const studios = ids.length
    ? await ctx.db.studio.findMany({
        where: { id: { in: ids }, tenantId: ctx.tenant.id },
        select: { name: true },
      })
    : [];
  const places = [
    ...studios.map((s) => mdEscape(s.name)),
    ...(label.length > ids.length ? [`${label.length - ids.length} other source(s)`] : []),
  ];
  return `It carries what its runs read in ${places.join(", ")}: writing it where others read waits for your approval. Editing or clearing it makes it your words.`;
}

function entryBlock(handle: string, e: EntryRow): Block {
  const who =
    e.kind === "write"
      ? e.runId
        ? `written by ${link(`run ${e.runId}`, `/subagents/${handle}/runs/${e.runId}`)}${e.stepNumber ? ` at ${link(`step ${e.stepNumber}`, stepPath(handle, e.runId, e.stepNumber))}` : ""}`
        : "written by the agent"
      : `${e.kind === "clear" ? "cleared" : "edited"} by ${mdEscape(e.author?.name ?? "a manager")}`;
  const md = `### ${when(e.createdAt)} — ${who}\n\n${e.kind === "clear" ? "_Cleared._" : quote(e.text)}`;
  return { md, html: `<section id="${entryAnchor(e.id)}">${markdownToHtml(md)}</section>` };
}

export const agentMemoryPage = definePage({
  pattern: "/subagents/:handle/memory",
  actions: ["edit_scratchpad", "clear_scratchpad"],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  async render(ctx, scope, query) {
    const a = scope.agent;
    const paged = paging(query);
    const { entries, total } = await scratchpadHistory(ctx.db, a.id, paged.skip, paged.take);
    const path = `/subagents/${a.handle}/memory`;
    return {
      title: `Memory of ${a.name}`,
      breadcrumb: [...agentCrumbs(a), { label: "Memory" }],
      blocks: [
        {
          md: `## Scratchpad\n\nNotes ${mdEscape(a.name)} keeps for itself with \`update_scratchpad\` and reads at the start of every run.\n\n${a.scratchpad ? quote(a.scratchpad) : "_Empty._"}\n\n${await carried(ctx, a.scratchpadLabel, a.id)}`,
        },
        { md: `## History (${total})` },
        ...(entries.length ? entries.map((e) => entryBlock(a.handle, e)) : [{ md: "_No writes yet._" }]),
        { md: pager(path, paged, total) },
      ],
    };
  },
});
