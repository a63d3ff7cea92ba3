// The agent directory (/agents): the agents a person may ask, what each does, where it works,
// who manages it and how to wake it. Its lines are also an agent's profile's (people.ts), so
// /u/scout and /agents say the same thing. Who is listed is askableAgents' (directory.ts).
import { type AskableAgent, askableAgents } from "../agents/core/directory.ts";
import { code, link, mdEscape } from "../registry/markdown.ts";
import { type Audience, type Block, definePage, type PageView } from "../registry/types.ts";
import { home, pager, paging, studioName, who } from "./format.ts";

export const AGENTS_PATH = "/agents";

const NO_DESCRIPTION = "_Its managers have not said yet._";

function managedLine(agent: AskableAgent): string {
  const { owner } = agent;
  const managers =
    owner.kind === "person"
      ? who(owner)
      : `the admins of ${link(studioName(owner), `/studios/${owner.handle}`)}`;
  return `Managed by ${managers}${agent.manages ? " (you)" : ""}.`;
}

function worksLine(agent: AskableAgent): string {
  if (!agent.studios.length) return "Works in no studio you are in.";
  return `Works in ${agent.studios.map((studio) => link(studioName(studio), `/studios/${studio.handle}`)).join(", ")}.`;
}

/** How this reader wakes it: a mention where both are, its run form when it is theirs to use. */
export function howToAsk(agent: AskableAgent): string {
  const ways: string[] = [];
  if (agent.studios.length)
    ways.push(
      `write ${code(`@${agent.handle}`)} in a note, a comment or a decision in ${agent.studios.length === 1 ? "that studio" : "one of those studios"}: it answers there, and says so if it has nothing to add`,
    );
  if (agent.mayRun)
    ways.push(`give it a task with ${link("its run form", `/subagents/${agent.handle}/run`)}`);
  const paused = agent.paused
    ? " It is **paused** now: a mention is recorded and wakes it only once its managers resume it."
    : "";
  return `**To ask it:** ${ways.join("; or ") || "you cannot: it works in no studio you are in"}.${paused}`;
}

/** What an agent's profile and its directory entry say about it, to this reader. */
export function askBlocks(agent: AskableAgent): Block[] {
  return [
    { md: `**What it does:** ${agent.description ? mdEscape(agent.description) : NO_DESCRIPTION}` },
    { md: `${worksLine(agent)} ${managedLine(agent)}\n\n${howToAsk(agent)}` },
  ];
}

/** The studios a page about these agents names: each counts as a source (a studio's name can be private). */
export function agentSources(agents: AskableAgent[]): Audience[] {
  const ids = new Set(agents.flatMap((agent) => agent.studios.map((studio) => studio.id)));
  return [...ids].map((studio) => ({ studio }));
}

function directoryView(agents: AskableAgent[], total: number, pagerLine: string): PageView {
  const entries = agents.flatMap((agent): Block[] => [
    {
      md: `## ${mdEscape(agent.name)} (${code(`@${agent.handle}`)})\n\n${link("Profile", `/u/${agent.handle}`)}`,
    },
    ...askBlocks(agent),
  ]);
  return {
    title: "Agents you can ask",
    breadcrumb: [home, { label: "Agents" }],
    blocks: [
      {
        md: total
          ? "AI agents answer when you mention them where they work, in a note, a comment or a decision, and reply in the same thread (marked **AI**). While one works its line says so under the thread; if it has nothing to add, it says that too, and you are told."
          : "No agent works in your studios yet. An agent is a person's or a studio's: create one under [Subagents](/subagents), or ask a studio's admins to add theirs.",
      },
      ...entries,
      { md: pagerLine },
    ],
    sources: agentSources(agents),
  };
}

export const agentsDirectoryPage = definePage({
  pattern: AGENTS_PATH,
  actions: [],
  resolve: async () => ({}),
  async render(ctx, _scope, query) {
    const paged = paging(query);
    // Few per workspace: read all that may be asked, show a page of them.
    const all = await askableAgents(ctx.db, ctx.tenant.id, ctx.actor.id);
    const shown = all.slice(paged.skip, paged.skip + paged.take);
    return directoryView(shown, all.length, pager(AGENTS_PATH, paged, all.length));
  },
});
