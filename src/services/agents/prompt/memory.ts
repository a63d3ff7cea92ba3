// A run's working memory, rebuilt every step from its step records (the rows, or the records
// this worker just wrote, which are the same): so a run resumed after a crash, an approval
// or an answer remembers exactly what it would have remembered without the interruption.
// What it remembers: one line per step with the note the model left with it, and the pages
// it read (the last ones in full, older ones as excerpts). prompt.ts decides how much fits.
import { actionsSection } from "../../registry/markdown.ts";
import { pageOf, wholeFrom } from "./page-log.ts";

/** A step as memory reads it: a step row, or the record just written for one. */
export interface Remembered {
  number: number;
  type: string;
  path?: string | null;
  detail: unknown;
  /** Its page's excerpt, kept instead of the page once the run can only show it as one (compact). */
  gist?: Gist;
  /** The actions its page listed, kept when the page is not (compact): the run's tools are theirs. */
  actions?: readonly string[];
}

/** What an older page shows in a prompt: its title and the start of its text (excerptLine). */
export interface Gist {
  title: string;
  text: string;
}

/** The most a note keeps: longer notes are cut, not refused (the model's step still counts). */
export const NOTE_CHARS = 400;
/** The newest steps always get their line (when it fits), note or not; older ones only with a note. */
export const RECENT_STEPS = 8;
const EXCERPT_CHARS = 120;

const clip = (text: string, count: number) => (text.length > count ? `${text.slice(0, count - 1)}…` : text);
const detailOf = (step: Pick<Remembered, "detail">) => (step.detail ?? {}) as Record<string, unknown>;

export function noteOf(step: Pick<Remembered, "detail">): string | undefined {
  const note = detailOf(step).note;
  return typeof note === "string" && note ? note : undefined;
}

/**
 * JSON with every object's keys sorted: a step's params read the same from the record this
 * worker just made and from its row, whose jsonb keeps keys in an order of its own, so a
 * resumed run's prompt (and a rebuilt one, step-prompt.ts) is the one sent.
 */
export function sortedJson(value: unknown): string {
  return JSON.stringify(value, (_key, part) =>
    part && typeof part === "object" && !Array.isArray(part)
      ? Object.fromEntries(
          Object.entries(part).sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0)),
        )
      : part,
  );
}

/** What a step did, in one line: enough to remember, short enough to keep many. */
export function summarize(step: Omit<Remembered, "number">): string {
  const detail = detailOf(step);
  const outcome = detail.ok === false ? `failed: ${clip(String(detail.error ?? ""), 160)}` : "ok";
  switch (step.type) {
    case "navigate":
      return `navigate ${step.path} — ${detail.ok === false ? `error ${detail.status}` : "ok"}`;
    case "execute":
      return `execute ${detail.action}(${clip(sortedJson(detail.params ?? {}), 160)}) on ${step.path} — ${detail.ok === false ? outcome : `ok: ${clip(String(detail.notice ?? ""), 120)}`}`;
    case "error":
      return `invalid reply — ${clip(String(detail.error ?? ""), 160)}`;
    case "ask_owner":
      return `asked your owner: "${clip(String(detail.question ?? ""), 200)}"`;
    case "approval":
      // Said outright: a model told "rejected" still finished with "Replied in the thread." (issue 30).
      return `your owner's review of #${detail.pending} (${detail.action}): ${detail.status}${detail.notice ? ` — ${clip(String(detail.notice), 160)}` : detail.message ? ` — ${clip(String(detail.message), 300)}` : ""}${detail.status === "executed" ? "" : " (so it was NOT done: do not report it as done)"}`;
    case "answer":
      return `your owner answered: "${clip(String(detail.answer ?? ""), 500)}"`;
    default:
      return `${step.type}`;
  }
}

export const line = (remembered: Remembered) => {
  const note = noteOf(remembered);
  return `${remembered.number}. ${summarize(remembered)}${note ? `\n   your note: ${note}` : ""}`;
};

/** A page's title and the start of its text, without its breadcrumb, link targets and actions. */
function gistOf(markdown: string): Gist {
  const body = markdown.split("\n## Actions")[0]!;
  const title = /^# (.+)$/m.exec(body)?.[1]?.trim() ?? "";
  const text = body
    .replace(/^# .+$/m, "")
    .replace(/^\[Home\]\(\/\) › .*$/m, "") // the breadcrumb: the path says where it was
    // Links as their text: an excerpt is for remembering, and the ids in link targets cost
    // more tokens than the words they link (the page, read again, has them).
    .replace(/\[([^\]\n]*)\]\([^)\s]*\)/g, "$1")
    .replace(/\s+/g, " ")
    .trim();
  return { title: copied(clip(title, 120)), text: copied(clip(text, EXCERPT_CHARS)) };
}

/**
 * A string of its own: a slice of a longer string keeps the whole of it alive, and a gist
 * kept for a page it no longer holds must not hold the page. Through JSON, as it is to the
 * character (half a surrogate pair too, which a UTF-8 round trip would not keep).
 */
const copied = (text: string): string => JSON.parse(JSON.stringify(text));

/**
 * A page read, in a line under the log entry of the step that read it (which names its
 * path): its title and the start of its text, from the page or the gist kept of it.
 */
export function excerptLine(page: { markdown: string; gist?: Gist }): string {
  const { title, text } = page.gist ?? gistOf(page.markdown);
  return `excerpt: ${title ? `${title} — ` : ""}${text}`;
}

/**
 * The steps that first read each path (or landed on it after an action): the memory log
 * shows an excerpt of the page with each (memory-log.ts). The first, not the newest: a
 * step's entry in the log never changes once written, so the log only grows.
 */
export function firstReads(steps: Remembered[]): Set<number> {
  const paths = new Set<string>();
  const first = new Set<number>();
  steps.forEach((step, index) => {
    const path = detailOf(step).resultPath;
    if (typeof path !== "string" || paths.has(path) || !readPage(step)) return;
    paths.add(path);
    first.add(index);
  });
  return first;
}

const readPage = (step: Remembered) => typeof detailOf(step).page === "string" || Boolean(step.gist);

/**
 * What a run holds while it waits on the model: a prompt shows the pages from the log's page
 * start whole (page-log.ts) and the current page, and an excerpt of each path's first read
 * (firstReads). So the window's reads and the newest read stay whole, first reads keep their
 * gist, and other reads keep nothing but their actions' names (the run's tools): the prompts
 * are the same, the memory is not (a 12-step run held a dozen pages of up to 12,000
 * characters). `steps` is changed in place; details are copied, never changed, since the
 * record just written may still be in flight.
 */
export function compact(steps: Remembered[]): void {
  const from = wholeFrom(steps);
  let newest = steps.length - 1;
  while (newest >= 0 && pageOf(steps[newest]!) === undefined) newest--;
  const first = firstReads(steps);
  for (let index = 0; index < Math.min(from, steps.length); index++) {
    const step = steps[index]!;
    const { page, ...rest } = detailOf(step);
    if (index === newest || (typeof page !== "string" && (!step.gist || first.has(index)))) continue;
    const gist = first.has(index) ? (step.gist ?? gistOf(page as string)) : undefined;
    const actions = actionsRead(step);
    steps[index] = {
      number: step.number,
      type: step.type,
      path: step.path,
      detail: rest,
      ...(gist && { gist }),
      ...(actions.length && { actions }),
    };
  }
}

const namesOf = new WeakMap<object, readonly string[]>();

/** The actions the page a step read (or landed on) listed, in its order; none for a failed read. */
export function actionsRead(step: Remembered): readonly string[] {
  if (step.actions) return step.actions;
  const detail = detailOf(step);
  if (typeof detail.page !== "string" || typeof detail.resultPath !== "string") return [];
  let names = namesOf.get(detail);
  if (!names) {
    names = pageActionNames(detail.page);
    namesOf.set(detail, names);
  }
  return names;
}

/** A page's actions by name, as its `## Actions` lists them. */
export const pageActionNames = (markdown: string): string[] =>
  actionsSection(markdown)?.lines.map((l) => l.name) ?? [];

/** Where the agent was after its last step (a resumed run continues from there). */
export function lastPath(steps: Pick<Remembered, "detail">[]): string | null {
  for (let index = steps.length - 1; index >= 0; index--) {
    const path = detailOf(steps[index]!).resultPath;
    if (typeof path === "string") return path;
  }
  return null;
}
