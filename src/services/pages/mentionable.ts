// Who the reader may mention (/mentionable?q=sc&studio=general): the composers' @-autocomplete
// asks it as JSON (routes/mentionable.ts, for public/mentions.js), anyone may read it as a
// page. Filtered by the one rule of who reads and wakes what (agents/core/directory.ts): a
// studio the reader is not in is a 404, as everywhere.

import { loadStudio } from "../access.ts";
import { type Mentionable, mentionable } from "../agents/core/directory.ts";
import { code, mdEscape } from "../registry/markdown.ts";
import { type Ctx, definePage, type Query, type StudioScope } from "../registry/types.ts";
import { excerpt, home, studioName, who } from "./format.ts";

export const MENTIONABLE_PATH = "/mentionable";

/** What was typed after the `@`: a handle's or a name's start, at most 40 characters. */
function typed(query: Query): string {
  return (query.q ?? "").trim().replace(/^@/, "").slice(0, 40);
}

/** The people and agents whose handle or name starts with `?q=`, in `?studio=` when given. */
export async function mentionableFor(
  ctx: Ctx,
  query: Query,
  limit: number,
): Promise<{ prefix: string; studio: StudioScope | null; found: Mentionable[] }> {
  const studio = query.studio ? await loadStudio(ctx, query.studio) : null;
  const prefix = typed(query);
  const found = await mentionable(ctx.db, ctx.tenant.id, ctx.actor.id, {
    prefix,
    limit,
    ...(studio && { studioId: studio.id }),
  });
  return { prefix, studio, found };
}

function line(entry: Mentionable): string {
  const what =
    entry.kind === "agent"
      ? ` · AI agent${entry.description ? ` — ${mdEscape(excerpt(entry.description, 120))}` : ""}`
      : "";
  return `- ${code(`@${entry.handle}`)} ${who(entry)}${what}`;
}

export const mentionablePage = definePage({
  pattern: MENTIONABLE_PATH,
  actions: [],
  resolve: async () => ({}),
  async render(ctx, _scope, query) {
    const { prefix, studio, found } = await mentionableFor(ctx, query, 20);
    const where = studio ? ` in ${studioName(studio)}` : "";
    const starting = prefix ? `, starting with “${mdEscape(prefix)}”` : "";
    return {
      title: "Who you can mention",
      breadcrumb: [home, { label: "Mentions" }],
      blocks: [
        {
          md: `People and agents you may mention${where}${starting}: a person is notified, an agent wakes and answers. \`?q=\` narrows by the start of a handle or a name, \`?studio=\` to one studio.`,
        },
        { md: found.length ? found.map(line).join("\n") : "_Nobody matches._" },
      ],
      ...(studio && { sources: [{ studio: studio.id }] }),
    };
  },
});
