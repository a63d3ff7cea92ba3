// A page named as a person names it: "the note “Retro day” in General". Shared by what shows
// a queued action in the app (pages/pending-format.ts) and what tells people of it outside
// the app (reach/): one rule for when a title may be shown.
import type { Db } from "../db/prisma.ts";

const PAGE = /^\/studios\/([a-z0-9_-]+)(?:\/(notes|decisions|commitments)\/([a-z0-9]+))?$/;

/**
 * Who the title is for: a person (named only in studios they are in, as notifications name
 * them: a reviewer who has left a studio sees its path, not its notes' titles), or a studio
 * (an endpoint its admins keep: named only in that studio).
 */
export type TitleReader = { userId: string } | { studioId: string };

/** The studio a page path is in, by handle (null: not a studio's page). */
export const studioHandleOf = (path: string) => PAGE.exec(path)?.[1] ?? null;

/**
 * Each path that names a studio or its content, in words, read in at most four statements;
 * any other path (or one that no longer exists, or one the reader may not see named) is left out.
 */
export async function pageTitles(
  db: Db,
  tenantId: string,
  reader: TitleReader,
  paths: string[],
): Promise<Map<string, string>> {
  const parsed = paths.map((p) => [p, PAGE.exec(p)] as const).filter(([, match]) => match);
  const ids = (kind: string) =>
    parsed.filter(([, match]) => match![2] === kind).map(([, match]) => match![3]!);
  const [studios, notes, decisions, commitments] = await Promise.all([
    parsed.length
      ? db.studio.findMany({
          where: {
            tenantId,
            handle: { in: parsed.map(([, match]) => match![1]!) },
            ...("userId" in reader
              ? { members: { some: { userId: reader.userId } } }
              : { id: reader.studioId }),
          },
        })
      : [],
    ids("notes").length ? db.note.findMany({ where: { tenantId, id: { in: ids("notes") } } }) : [],
    ids("decisions").length
      ? db.decision.findMany({ where: { tenantId, id: { in: ids("decisions") } } })
      : [],
    ids("commitments").length
      ? db.commitment.findMany({ where: { tenantId, id: { in: ids("commitments") } } })
      : [],
  ]);
  const studio = new Map(studios.map((s) => [s.handle, s.name]));
  const named = new Map<string, string>([
    ...notes.map((n) => [n.id, `the note “${n.title || "Untitled note"}”`] as const),
    ...decisions.map((d) => [d.id, `the decision “${d.question}”`] as const),
    ...commitments.map((c) => [c.id, `the commitment “${c.title}”`] as const),
  ]);
  const out = new Map<string, string>();
  for (const [path, match] of parsed) {
    const studioName = studio.get(match![1]!);
    if (!studioName) continue;
    const thing = match![3] ? named.get(match![3]) : undefined;
    if (match![3] && !thing) continue;
    out.set(path, thing ? `${thing} in ${studioName}` : `the studio ${studioName}`);
  }
  return out;
}
