// A page view as HTML: its markdown blocks, the forms placed in it, and the side panel of
// the rest of its actions (each generated from its schema in html.ts).
import { actionForm, escapeHtml, type FormState, markdownToHtml } from "./html.ts";
import { fields } from "./params.ts";
import type { ActionDef, FormBlock, PageView, Scope } from "./types.ts";

interface RenderOpts {
  path: string;
  csrf: string;
  state?: FormState;
  /** What the page resolved: an edit form starts from its current values (`ActionDef.current`). */
  scope?: Scope;
}

export function renderPageHtml(
  view: PageView,
  actions: ActionDef[],
  opts: RenderOpts,
): { content: string; actions: string } {
  const byName = new Map(actions.map((a) => [a.name, a]));
  const inline = view.blocks.filter((b): b is FormBlock => "form" in b && byName.has(b.form.action));
  // Whether a form in the page shows the failure (then the panel does not repeat the form).
  const failedInPage = inline.some((b) => failsHere(b, opts.state));
  const content = view.blocks
    .map((b) => {
      if ("md" in b) return b.html ?? markdownToHtml(b.md);
      const a = byName.get(b.form.action);
      return a ? inlineForm(a, b, opts) : "";
    })
    .join("\n");
  // An action whose inline forms fix a required param (vote on *this* option) lives only inline;
  // one whose inline forms fix an optional param (reply_to) keeps its panel form without that param.
  const covered = new Set<string>();
  const hidden = new Map<string, Set<string>>();
  for (const b of inline) {
    const a = byName.get(b.form.action)!;
    const required = fields(a.params)
      .filter((f) => f.required)
      .map((f) => f.name);
    // A form in the page that offers every param and fixes none (a folded one listing them all) stands in for the panel's.
    const complete =
      !Object.keys(b.form.fixed).length && fields(a.params).every((f) => b.form.fields?.includes(f.name));
    if (b.form.style === "block" || complete || Object.keys(b.form.fixed).some((k) => required.includes(k)))
      covered.add(a.name);
    for (const k of Object.keys(b.form.fixed)) hidden.set(a.name, (hidden.get(a.name) ?? new Set()).add(k));
  }
  // An action on one item of a list (its id picked by the buttons beside each, or a select the page
  // fills from the data) has no form of its own: the panel would ask a person to type an id.
  const besideOnly = (a: ActionDef) => fields(a.params).some((f) => f.besideOnly);
  const failedHere = (a: ActionDef) => opts.state?.action === a.name && !failedInPage;
  const shown = actions.filter((a) => (!covered.has(a.name) && !besideOnly(a)) || failedHere(a));
  const panel = shown.map((a, i) => panelAction(a, i, shown.length, hidden.get(a.name), opts)).join("\n");
  return { content, actions: panel };
}

function panelAction(
  a: ActionDef,
  i: number,
  count: number,
  skip: Set<string> | undefined,
  opts: RenderOpts,
) {
  // The first action (and the one that just failed) is open; the rest fold away so the panel stays short.
  const open = opts.state ? opts.state.action === a.name : i === 0 || count <= 2;
  const only = fields(a.params)
    .filter((f) => !skip?.has(f.name) && !f.pickedBeside)
    .map((f) => f.name);
  if (!only.length) {
    // Nothing to fill in: one button that says what it does.
    const button = actionForm(a, {
      path: opts.path,
      csrf: opts.csrf,
      state: opts.state,
      label: a.description,
      only,
    });
    return `<div class="action simple" id="action-${a.name}">${button}</div>`;
  }
  const current = a.current && opts.scope ? a.current(opts.scope) : undefined;
  const state = opts.state ?? (current && { action: a.name, values: current, issues: [] });
  const form = actionForm(a, { path: opts.path, csrf: opts.csrf, state, only });
  return `<details class="action" id="action-${a.name}"${open ? " open" : ""}><summary>${escapeHtml(a.description)}</summary>${form}</details>`;
}

function failsHere(b: FormBlock, state?: FormState): boolean {
  return (
    state?.action === b.form.action && Object.entries(b.form.fixed).every(([k, v]) => state.values[k] === v)
  );
}

function inlineForm(a: ActionDef, b: FormBlock, opts: RenderOpts): string {
  const failedHere = failsHere(b, opts.state);
  const prefill = b.form.values ? { action: a.name, values: b.form.values, issues: [] } : undefined;
  const form = actionForm(a, {
    path: opts.path,
    csrf: opts.csrf,
    fixed: b.form.fixed,
    only: b.form.fields ?? (b.form.style === "block" ? fields(a.params).map((f) => f.name) : []),
    label: b.form.label,
    choices: b.form.choices,
    disabled: b.form.disabled,
    nested: b.form.nested,
    inline: b.form.style === undefined || b.form.style === "inline",
    state: failedHere ? opts.state : prefill,
  });
  return b.form.style === "folded"
    ? `<details class="folded${b.form.depth ? ` depth-${b.form.depth}` : ""}"${failedHere ? " open" : ""}><summary>${escapeHtml(b.form.label)}</summary>${form}</details>`
    : form;
}
