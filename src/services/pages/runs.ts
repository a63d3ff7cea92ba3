import type { SubagentTaskRun } from "../../generated/prisma/client.ts";
import { NotFoundError } from "../../lib/errors.ts";
import { loadRun } from "../access.ts";
import { loadAgent, mayManage } from "../agents/ownership.ts";
import { describeMasked, type MaskCounts } from "../agents/secret-masking.ts";
import { usd } from "../money/pricing.ts";
import { fenced, link, mdEscape, quote } from "../registry/markdown.ts";
import type { Block, PageDef } from "../registry/types.ts";
import { excerpt, pager, paging, when } from "./format.ts";
import { agentCrumbs } from "./subagents.ts";

const ACTIVE = new Set(["queued", "running", "waiting"]);

// A trigger of its own (not an event in a thread) links to the agent's list of them.
const TRIGGER_PAGES: Record<string, string> = {
  subscription: "subscriptions",
  schedule: "schedules",
  webhook: "webhooks",
};

/** What woke a run: its kind, linked to the subscription, schedule or webhook when there is one. */
export function triggerText(handle: string, r: Pick<SubagentTaskRun, "triggerKind" | "triggerRef">): string {
  const page = TRIGGER_PAGES[r.triggerKind];
  return page && r.triggerRef
    ? link(r.triggerKind, `/subagents/${handle}/${page}#${r.triggerRef}`)
    : r.triggerKind;
}

export function runLine(handle: string, r: SubagentTaskRun): string {
  return `- ${link(`Run ${r.id}`, `/subagents/${handle}/runs/${r.id}`)} · **${r.status}**${r.stopReason && r.status !== "completed" ? ` (${r.stopReason})` : ""} · ${triggerText(handle, r)} · ${when(r.createdAt)} · ${r.stepsCount} steps — ${mdEscape(excerpt(r.task, 90))}`;
}

function duration(r: SubagentTaskRun): string {
  if (!r.startedAt) return "not started";
  const end = r.completedAt ?? new Date();
  return `${((end.getTime() - r.startedAt.getTime()) / 1000).toFixed(1)} s${r.completedAt ? "" : " so far"}`;
}

export const runFormPage: PageDef = {
  pattern: "/subagents/:handle/run",
  actions: ["run_task"],
  // A studio's agent whose admins let members run it: any member of the studio gives it tasks here.
  resolve: async (ctx, p) => ({ agent: await loadAgent(ctx, p.handle!, { members: "run" }) }),
  async render(_ctx, scope) {
    const a = scope.agent!;
    return {
      title: `Run a task with ${a.name}`,
      breadcrumb: [...agentCrumbs(a), { label: "Run" }],
      blocks: [
        {
          md: `Describe what ${mdEscape(a.name)} should do. It starts at \`/whoami\`, reads pages and uses actions like you would, and every step is recorded on the run's page.`,
        },
      ],
    };
  },
};

export const runsPage: PageDef = {
  pattern: "/subagents/:handle/runs",
  actions: [],
  resolve: async (ctx, p) => ({ agent: await loadAgent(ctx, p.handle!) }),
  async render(ctx, scope, query) {
    const a = scope.agent!;
    const pg = paging(query);
    const [runs, total] = await Promise.all([
      ctx.db.subagentTaskRun.findMany({
        where: { agentId: a.id },
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        skip: pg.skip,
        take: pg.take,
      }),
      ctx.db.subagentTaskRun.count({ where: { agentId: a.id } }),
    ]);
    return {
      title: `Runs of ${a.name}`,
      breadcrumb: [...agentCrumbs(a), { label: "Runs" }],
      blocks: [
        { md: runs.length ? runs.map((r) => runLine(a.handle, r)).join("\n") : "_No runs yet._" },
        { md: pager(`/subagents/${a.handle}/runs`, pg, total) },
      ],
      refreshSeconds: runs.some((r) => ACTIVE.has(r.status)) ? 3 : undefined,
    };
  },
};

function stepBlock(s: {
  number: number;
  type: string;
  path: string | null;
  detail: unknown;
  inputTokens: number;
  outputTokens: number;
  durationMs: number;
}): string {
  const d = (s.detail ?? {}) as Record<string, unknown>;
  const head = `### ${s.number} · ${s.type}${s.path ? ` \`${s.path}\`` : ""}${d.ok === false ? " · **failed**" : ""} · ${s.inputTokens} in / ${s.outputTokens} out tokens · ${s.durationMs} ms`;
  const lines = [head, ""];
  if (d.masked && typeof d.masked === "object")
    lines.push(`Masked before the model saw this step: ${describeMasked(d.masked as MaskCounts)}.`, "");
  // Why it acted, and what it kept in mind for later: the model's own words (protocol.ts).
  if (typeof d.reason === "string" && d.reason) lines.push(`Why: ${mdEscape(d.reason)}`, "");
  if (typeof d.note === "string" && d.note)
    lines.push("Its note (its memory for this run):", "", quote(d.note), "");
  if (s.type === "execute")
    lines.push(
      `Action \`${String(d.action)}\` with:`,
      "",
      fenced(JSON.stringify(d.params ?? {}, null, 2).slice(0, 2000), "json"),
      "",
    );
  if (d.ok === false && d.error) lines.push(`Error: ${mdEscape(String(d.error))}`, "");
  if (d.notice)
    lines.push(
      `Result: ${mdEscape(String(d.notice))}${d.location ? ` → ${link(String(d.location), String(d.location))}` : ""}`,
      "",
    );
  if (s.type === "finish") lines.push(quote(String(d.message ?? "")), "");
  if (s.type === "ask_owner") lines.push("Asked:", "", quote(String(d.question ?? "")), "");
  if (s.type === "answer") lines.push("Owner answered:", "", quote(String(d.answer ?? "")), "");
  if (s.type === "approval")
    lines.push(
      `Review of #${String(d.pending)} (\`${String(d.action)}\`): **${String(d.status)}**${d.message ? ` — ${mdEscape(String(d.message))}` : ""}`,
      "",
    );
  if (s.type === "error" && typeof d.reply === "string")
    lines.push("The model replied:", "", fenced(d.reply.slice(0, 600)), "");
  if (typeof d.page === "string") {
    const page = d.page.length > 600 ? `${d.page.slice(0, 600)}\n…` : d.page;
    lines.push("Page seen (start):", "", fenced(page, "markdown"), "");
  }
  return lines.join("\n");
}

export const runPage: PageDef = {
  pattern: "/subagents/:handle/runs/:run",
  actions: ["answer_question", "stop_run"],
  async resolve(ctx, p) {
    // Its managers see every run; a member who gave a studio's agent a task sees that run.
    const agent = await loadAgent(ctx, p.handle!, { members: "run" });
    const taskRun = await loadRun(ctx, agent.id, p.run!);
    if (!mayManage(ctx.actor, agent) && taskRun.initiatedById !== ctx.actor.id)
      throw new NotFoundError(`No run ${p.run}`);
    return { agent, taskRun };
  },
  async render(ctx, scope) {
    const a = scope.agent!;
    const r = scope.taskRun!;
    const [steps, resources, initiator, pending] = await Promise.all([
      ctx.db.subagentTaskRunStep.findMany({ where: { runId: r.id }, orderBy: { number: "asc" } }),
      ctx.db.subagentTaskRunResource.findMany({ where: { runId: r.id }, orderBy: { createdAt: "asc" } }),
      r.initiatedById ? ctx.db.user.findUnique({ where: { id: r.initiatedById } }) : null,
      ctx.db.agentPendingAction.findMany({ where: { runId: r.id }, orderBy: { createdAt: "asc" } }),
    ]);
    const facts = [
      `Status: **${r.status}**${r.stopReason ? ` (${r.stopReason})` : ""}`,
      `trigger: ${triggerText(a.handle, r)}${initiator ? ` by [@${initiator.handle}](/u/${initiator.handle})` : ""}`,
      `model: ${r.model ? `\`${mdEscape(r.model)}\`` : "default"}`,
      `steps: ${r.stepsCount} of ${r.maxSteps}`,
      `tokens: ${r.inputTokens} in${r.cachedTokens ? ` (${r.cachedTokens} cached)` : ""} / ${r.outputTokens} out`,
      `cost: ${usd(r.costMicros)}`,
      `time: ${duration(r)}`,
      `queued ${when(r.createdAt)}`,
    ];
    const blocks: Block[] = [{ md: facts.join(" · ") }, { md: `## Task\n\n${quote(r.task)}` }];
    if (r.finalMessage) blocks.push({ md: `## Final message\n\n${quote(r.finalMessage)}` });
    if (r.error)
      blocks.push({
        md: `## ${r.status === "skipped" ? "Why it did not run" : "Error"}\n\n${mdEscape(r.error)}`,
      });
    if (r.status === "waiting" && r.stopReason === "asked_owner" && r.question)
      blocks.push({ md: `## Waiting for your answer\n\n${quote(r.question)}` });
    if (pending.length)
      blocks.push({
        md: `## Actions it asked you to approve (${pending.length})\n\n${pending.map((p) => `- ${link(`#${p.id}`, `/subagents/${a.handle}/pending/${p.id}`)} \`${p.actionName}\` on ${link(p.pagePath, p.pagePath)} — **${p.status}**${p.reviewNote ? `: ${mdEscape(p.reviewNote)}` : p.error ? `: ${mdEscape(p.error)}` : ""}${p.resultPath ? ` → ${link(p.resultPath, p.resultPath)}` : ""}`).join("\n")}${r.status === "waiting" && r.stopReason === "awaiting_approval" ? "\n\nThe run waits for your review." : ""}`,
      });
    blocks.push({
      md: `## Resources it created or changed (${resources.length})\n\n${resources.length ? resources.map((x) => `- ${x.resourceType} \`${x.resourceId}\` — ${x.action} at step ${x.stepNumber} — ${link(x.path, x.path)}`).join("\n") : "_None._"}`,
    });
    blocks.push({ md: `## Steps (${steps.length})\n\n${steps.length ? "" : "_No steps yet._"}` });
    for (const s of steps) blocks.push({ md: stepBlock(s) });
    return {
      title: `Run ${r.id} of ${a.name}`,
      breadcrumb: [
        ...agentCrumbs(a),
        { label: "Runs", path: `/subagents/${a.handle}/runs` },
        { label: r.id },
      ],
      blocks,
      refreshSeconds: ACTIVE.has(r.status) && r.status !== "waiting" ? 2 : undefined,
    };
  },
};
