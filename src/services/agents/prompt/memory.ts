// A run's working memory, rebuilt every step from its step records (the rows, or the records
// this worker just wrote, which are the same): so a run resumed after a crash, an approval
// or an answer remembers exactly what it would have remembered without the interruption.
// What it remembers: one line per step with the note the model left with it, and the pages
// it read (the last ones in full, older ones as excerpts). prompt.ts decides how much fits.
import { actionsSection } from "../../registry/markdown.ts";

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
const EXCERPT_CHARS = 200;

const clip = (s: string, count: number) => (s.length > count ? `${s.slice(0, count - 1)}…` : s);
const detailOf = (s: Pick<Remembered, "detail">) => (s.detail ?? {}) as Record<string, unknown>;

export function noteOf(s: Pick<Remembered, "detail">): string | undefined {
  const note = detailOf(s).note;
  return typeof note === "string" && note ? note : undefined;
}

/**
 * JSON with every object's keys sorted: a step's params read the same from the record this
 * worker just made and from its row, whose jsonb keeps keys in an order of its own, so a
 * resumed run's prompt (and a rebuilt one, step-prompt.ts) is the one sent.
 */
export function sortedJson(value: unknown): string {
  return JSON.stringify(value, (_k, x) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

/** What a step did, in one line: enough to remember, short enough to keep many. */
export function summarize(step: Omit<Remembered, "number">): string {
  const d = detailOf(step);
  const outcome = d.ok === false ? `failed: ${clip(String(d.error ?? ""), 160)}` : "ok";
  switch (step.type) {
    case "navigate":
      return `navigate ${step.path} — ${d.ok === false ? `error ${d.status}` : "ok"}`;
    case "execute":
      return `execute ${d.action}(${clip(sortedJson(d.params ?? {}), 160)}) on ${step.path} — ${d.ok === false ? outcome : `ok: ${clip(String(d.notice ?? ""), 120)}`}`;
    case "error":
      return `invalid reply — ${clip(String(d.error ?? ""), 160)}`;
    case "ask_owner":
      return `asked your owner: "${clip(String(d.question ?? ""), 200)}"`;
    case "approval":
      // Said outright: a model told "rejected" still finished with "Replied in the thread." (issue 30).
      return `your owner's review of #${d.pending} (${d.action}): ${d.status}${d.notice ? ` — ${clip(String(d.notice), 160)}` : d.message ? ` — ${clip(String(d.message), 300)}` : ""}${d.status === "executed" ? "" : " (so it was NOT done: do not report it as done)"}`;
    case "answer":
      return `your owner answered: "${clip(String(d.answer ?? ""), 500)}"`;
    default:
      return `${step.type}`;
  }
}

export const line = (remembered: Remembered) => {
  const note = noteOf(remembered);
  return `${remembered.number}. ${summarize(remembered)}${note ? `\n   your note: ${note}` : ""}`;
};

export interface SeenPage {
  path: string;
  /** Whole for the newest two paths (compact); "" when only the gist is kept. */
  markdown: string;
  gist?: Gist;
  step: number;
}

/** Pages the run read (or landed on after an action), newest first, one per path, except `current`. */
export function pagesSeen(steps: Remembered[], current: string): SeenPage[] {
  const seen = new Set([current]);
  const pages: SeenPage[] = [];
  for (let index = steps.length - 1; index >= 0; index--) {
    const s = steps[index]!;
    const d = detailOf(s);
    const page = typeof d.page === "string" ? d.page : undefined;
    if (typeof d.resultPath !== "string" || (page === undefined && !s.gist) || seen.has(d.resultPath))
      continue;
    seen.add(d.resultPath);
    pages.push({ path: d.resultPath, markdown: page ?? "", gist: s.gist, step: s.number });
  }
  return pages;
}

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
const copied = (s: string): string => JSON.parse(JSON.stringify(s));

/** A page in a line: its path, title and the start of its text. */
export function excerptLine(seenPage: SeenPage): string {
  const { title, text } = seenPage.gist ?? gistOf(seenPage.markdown);
  return `- ${seenPage.path} (step ${seenPage.step})${title ? ` — ${title}` : ""}: ${text}`;
}

/**
 * The steps that first read each path (or landed on it after an action): the memory log
 * shows an excerpt of the page with each (memory-log.ts). The first, not the newest: a
 * step's entry in the log never changes once written, so the log only grows.
 */
export function firstReads(steps: Remembered[]): Set<number> {
  const paths = new Set<string>();
  const first = new Set<number>();
  steps.forEach((s, i) => {
    const path = detailOf(s).resultPath;
    if (typeof path !== "string" || paths.has(path) || !readPage(s)) return;
    paths.add(path);
    first.add(i);
  });
  return first;
}

const readPage = (s: Remembered) => typeof detailOf(s).page === "string" || Boolean(s.gist);

/**
 * What a run holds while it waits on the model: a prompt shows the current page and the
 * previous one whole, and an excerpt of each path's first read (firstReads). So the newest
 * two paths' newest reads stay whole, first reads keep their gist, and other reads keep
 * nothing but their actions' names (the run's tools): the prompts are the same, the memory
 * is not (a 12-step run held a dozen pages of up to 12,000 characters). `steps` is changed
 * in place; details are copied, never changed, since the record just written may still be
 * in flight.
 */
export function compact(steps: Remembered[]): void {
  const whole = new Set<number>();
  const paths = new Set<string>();
  for (let i = steps.length - 1; i >= 0 && paths.size < 2; i--) {
    const path = detailOf(steps[i]!).resultPath;
    if (typeof path !== "string" || paths.has(path) || !readPage(steps[i]!)) continue;
    paths.add(path);
    whole.add(i);
  }
  const first = firstReads(steps);
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i]!;
    const { page, ...rest } = detailOf(s);
    if (whole.has(i) || (typeof page !== "string" && (!s.gist || first.has(i)))) continue;
    const gist = first.has(i) ? (s.gist ?? gistOf(page as string)) : undefined;
    const actions = actionsRead(s);
    steps[i] = {
      number: s.number,
      type: s.type,
      path: s.path,
      detail: rest,
      ...(gist && { gist }),
      ...(actions.length && { actions }),
    };
  }
}

const namesOf = new WeakMap<object, readonly string[]>();

/** The actions the page a step read (or landed on) listed, in its order; none for a failed read. */
export function actionsRead(s: Remembered): readonly string[] {
  if (s.actions) return s.actions;
  const d = detailOf(s);
  if (typeof d.page !== "string" || typeof d.resultPath !== "string") return [];
  let names = namesOf.get(d);
  if (!names) {
    names = pageActionNames(d.page);
    namesOf.set(d, names);
  }
  return names;
}

/** A page's actions by name, as its `## Actions` lists them. */
export const pageActionNames = (markdown: string): string[] =>
  actionsSection(markdown)?.lines.map((l) => l.name) ?? [];

/** Where the agent was after its last step (a resumed run continues from there). */
export function lastPath(steps: Pick<Remembered, "detail">[]): string | null {
  for (let i = steps.length - 1; i >= 0; i--) {
    const p = detailOf(steps[i]!).resultPath;
    if (typeof p === "string") return p;
  }
  return null;
}
