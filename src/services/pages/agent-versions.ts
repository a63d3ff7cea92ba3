// An agent's versions as its managers see them: every change of its settings, newest first,
// who made it and what changed in words; one version with its diff against the one before;
// Restore beside each. Managers only (loadAgent): a version holds its identity prompt and rules.
import { NotFoundError } from "../../lib/errors.ts";
import { diffText, lineCounts, lineDiff } from "../../lib/line-diff.ts";
import { loadAgent } from "../agents/core/ownership.ts";
import { settingsLines } from "../agents/core/version-diff.ts";
import {
  latestVersion,
  listVersions,
  loadVersion,
  settingsOf,
  type VersionRow,
} from "../agents/core/versions.ts";
import { fenced, link, mdEscape } from "../registry/markdown.ts";
import { type Block, definePage } from "../registry/types.ts";
import { agentCrumbs, pager, paging, when } from "./format.ts";

export const versionsPath = (handle: string) => `/subagents/${handle}/versions`;
export const versionPath = (handle: string, number: number) => `${versionsPath(handle)}/${number}`;

/** Who made a version and when, and what it restored. */
function madeBy(version: VersionRow): string {
  const who = version.author ? `by ${mdEscape(version.author.name)} (@${version.author.handle})` : "";
  const restored = version.restoredFrom ? ` · restored version ${version.restoredFrom}` : "";
  return `${when(version.createdAt)}${who ? ` · ${who}` : ""}${restored}`;
}

const wordsOf = (version: VersionRow) =>
  (Array.isArray(version.changes) ? version.changes : []).map((line) => `- ${mdEscape(String(line))}`);

/** Restore, for any version but the current one. */
function restoreForm(version: number, current: number | null): Block[] {
  if (version === current) return [];
  return [
    {
      form: {
        action: "restore_agent_version",
        fixed: { version: String(version) },
        label: `Restore version ${version}`,
      },
    },
  ];
}

function versionBlocks(handle: string, version: VersionRow, current: number | null): Block[] {
  const now = version.number === current ? " (current)" : "";
  return [
    {
      md: [
        `### ${link(`Version ${version.number}`, versionPath(handle, version.number))}${now}`,
        "",
        madeBy(version),
        "",
        ...wordsOf(version),
      ].join("\n"),
    },
    ...restoreForm(version.number, current),
  ];
}

export const agentVersionsPage = definePage({
  pattern: "/subagents/:handle/versions",
  actions: ["restore_agent_version"],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  async render(ctx, scope, query) {
    const agent = scope.agent;
    const paged = paging(query);
    const [{ versions, total }, current] = await Promise.all([
      listVersions(ctx.db, agent.id, paged.skip, paged.take),
      latestVersion(ctx.db, agent.id),
    ]);
    return {
      title: `Versions of ${agent.name}`,
      breadcrumb: [...agentCrumbs(agent), { label: "Versions" }],
      blocks: [
        {
          md: `Every change of ${mdEscape(agent.name)}'s identity prompt, what it does, model and fallbacks, capabilities, approvals, rules and limits is a numbered version. Each run records the version it was queued under. **Restore** brings a version's settings back, as a new version; its key and who may run it stay as they are.`,
        },
        { md: `## Versions (${total})` },
        ...(versions.length
          ? versions.flatMap((version) => versionBlocks(agent.handle, version, current))
          : [{ md: "_No versions yet._" }]),
        { md: pager(versionsPath(agent.handle), paged, total) },
      ],
    };
  },
});

export const agentVersionPage = definePage({
  pattern: "/subagents/:handle/versions/:version",
  actions: ["restore_agent_version"],
  async resolve(ctx, params) {
    const agent = await loadAgent(ctx, params.handle);
    const number = /^\d{1,9}$/.test(params.version) ? Number(params.version) : Number.NaN;
    const found = Number.isNaN(number) ? null : await loadVersion(ctx.db, agent.id, number);
    if (!found) throw new NotFoundError(`No version ${params.version} of @${agent.handle}`);
    return { agent, ...found };
  },
  async render(ctx, scope) {
    const { agent, version, previous } = scope;
    const current = await latestVersion(ctx.db, agent.id);
    const before = previous ? settingsLines(settingsOf(previous)).join("\n") : "";
    const diff = lineDiff(before, settingsLines(settingsOf(version)).join("\n"));
    const { added, removed } = lineCounts(diff);
    const against = previous
      ? `against ${link(`version ${previous.number}`, versionPath(agent.handle, previous.number))}`
      : "against nothing (its first version)";
    const nav = [
      previous ? link(`← Version ${previous.number}`, versionPath(agent.handle, previous.number)) : null,
      link("All versions", versionsPath(agent.handle)),
      current && version.number < current
        ? link(`Version ${version.number + 1} →`, versionPath(agent.handle, version.number + 1))
        : null,
    ].filter(Boolean);
    return {
      title: `Version ${version.number} of ${agent.name}`,
      breadcrumb: [
        ...agentCrumbs(agent),
        { label: "Versions", path: versionsPath(agent.handle) },
        { label: `Version ${version.number}` },
      ],
      blocks: [
        { md: nav.join(" · ") },
        {
          md: `${madeBy(version)}${version.number === current ? " · **its current version**" : ""}`,
        },
        { md: ["## What changed", "", ...wordsOf(version)].join("\n") },
        {
          md: `## Diff ${against}\n\n${added} line${added === 1 ? "" : "s"} added, ${removed} removed.\n\n${fenced(diffText(diff), "diff")}`,
        },
        ...restoreForm(version.number, current),
      ],
    };
  },
});
