// Who can read what a page shows and where an action writes (types.ts, Audience). The
// registry narrows a reader's label by every page it reads; write actions declare their
// audience with one of these, and agents/policy/labels.ts compares the two.
import type { Audience, Ctx, PageView, Scope, WriteAudience } from "./types.ts";

export function audienceKey(audience: Audience): string {
  if ("studio" in audience) return `s:${audience.studio}`;
  if ("people" in audience) return `p:${[...audience.people].sort().join(",")}`;
  if ("managersOf" in audience) return `m:${audience.managersOf}`;
  if ("outside" in audience) return "o";
  return "w";
}

/**
 * The label after reading `sources`, or null when they add nothing (the usual case: a run
 * reads one studio over and over). A label only grows in sources, so it only narrows in readers.
 */
export function narrowed(label: Audience[], sources: Audience[]): Audience[] | null {
  const have = new Set(label.map(audienceKey));
  const added = sources.filter((source) => {
    const key = audienceKey(source);
    if (have.has(key)) return false;
    have.add(key);
    return true;
  });
  return added.length ? [...label, ...added] : null;
}

/** A label as stored (jsonb): anything unreadable is dropped, never widened into a new source. */
export function parseLabel(raw: unknown): Audience[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter(
    (entry): entry is Audience =>
      typeof entry === "object" &&
      entry !== null &&
      (typeof entry.studio === "string" ||
        (Array.isArray(entry.people) && entry.people.every((p: unknown) => typeof p === "string")) ||
        typeof entry.managersOf === "string" ||
        entry.workspace === true),
  );
}

/** What reading a page adds to a label: what it says it quotes, else its studio's members. */
export function pageSources(ctx: Ctx, scope: Scope, view: PageView): Audience[] {
  if (view.sources) return view.sources;
  if (scope.studio) return [{ studio: scope.studio.id }];
  // Another agent's page shows what its managers wrote for it.
  if (scope.agent && scope.agent.id !== ctx.actor.id) return [{ managersOf: scope.agent.id }];
  return [];
}

/** Content that lands in the page's studio, read by its members. */
export const inStudio = (what: string): WriteAudience => ({
  what,
  to: (_ctx, scope) => {
    if (!scope.studio) throw new Error("a studio action without a studio in scope");
    return { studio: scope.studio.id };
  },
});

/** The actor's own things (its settings, notifications, scratchpad): it and whoever manages it. */
export const toSelf = (what: string): WriteAudience => ({
  what,
  to: (ctx) => ({ managersOf: ctx.actor.id }),
});

/** An agent's configuration, runs and keys: the agent of the page and its managers. */
export const toAgentManagers = (what: string): WriteAudience => ({
  what,
  to: (ctx, scope) => ({ managersOf: scope.agent?.id ?? ctx.actor.id }),
});

/** Seen by everyone in the workspace (a profile). */
export const toWorkspace = (what: string): WriteAudience => ({ what, to: () => ({ workspace: true }) });
