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
  /** The actions whose forms ask the session to re-confirm first (registry/step-up.ts). */
  reconfirm?: ReadonlySet<string>;
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
    .map((block) => {
      if ("md" in block) return block.html ?? markdownToHtml(block.md);
      const action = byName.get(block.form.action);
      return action ? inlineForm(action, block, opts) : "";
    })
    .join("\n");
  // An action whose inline forms fix a required param (vote on *this* option) lives only inline;
  // one whose inline forms fix an optional param (reply_to) keeps its panel form without that param.
  const covered = new Set<string>();
  const hidden = new Map<string, Set<string>>();
  for (const block of inline) {
    const action = byName.get(block.form.action)!;
    const required = fields(action.params)
      .filter((f) => f.required)
      .map((f) => f.name);
    // A form in the page that offers every param and fixes none (a folded one listing them all) stands in for the panel's.
    const complete =
      !Object.keys(block.form.fixed).length &&
      fields(action.params).every((f) => block.form.fields?.includes(f.name));
    if (
      block.form.style === "block" ||
      complete ||
      Object.keys(block.form.fixed).some((k) => required.includes(k))
    )
      covered.add(action.name);
    for (const param of Object.keys(block.form.fixed))
      hidden.set(action.name, (hidden.get(action.name) ?? new Set()).add(param));
  }
  // An action on one item of a list (its id picked by the buttons beside each, or a select the page
  // fills from the data) has no form of its own: the panel would ask a person to type an id.
  const besideOnly = (action: ActionDef) => fields(action.params).some((f) => f.besideOnly);
  const failedHere = (action: ActionDef) => opts.state?.action === action.name && !failedInPage;
  const offered = (action: ActionDef) => !view.offers || view.offers.includes(action.name);
  const shown = actions.filter(
    (a) => (offered(a) && !covered.has(a.name) && !besideOnly(a)) || failedHere(a),
  );
  const panel = shown.map((a, i) => panelAction(a, i, shown.length, hidden.get(a.name), opts)).join("\n");
  return { content, actions: panel };
}

function panelAction(
  action: ActionDef,
  index: number,
  count: number,
  skip: Set<string> | undefined,
  opts: RenderOpts,
) {
  // The first action (and the one that just failed) is open; the rest fold away so the panel stays short.
  const open = opts.state ? opts.state.action === action.name : index === 0 || count <= 2;
  const only = fields(action.params)
    .filter((f) => !skip?.has(f.name) && !f.pickedBeside)
    .map((f) => f.name);
  if (!only.length) {
    // Nothing to fill in: one button that says what it does.
    const button = actionForm(action, {
      path: opts.path,
      csrf: opts.csrf,
      state: opts.state,
      label: action.description,
      only,
      reconfirm: opts.reconfirm?.has(action.name),
    });
    return `<div class="action simple" id="action-${action.name}">${button}</div>`;
  }
  const current = action.current && opts.scope ? action.current(opts.scope) : undefined;
  const state = opts.state ?? (current && { action: action.name, values: current, issues: [] });
  const form = actionForm(action, {
    path: opts.path,
    csrf: opts.csrf,
    state,
    only,
    reconfirm: opts.reconfirm?.has(action.name),
  });
  return `<details class="action" id="action-${action.name}"${open ? " open" : ""}><summary>${escapeHtml(action.description)}</summary>${form}</details>`;
}

function failsHere(block: FormBlock, state?: FormState): boolean {
  return (
    state?.action === block.form.action &&
    Object.entries(block.form.fixed).every(([param, value]) => state.values[param] === value)
  );
}

function inlineForm(action: ActionDef, block: FormBlock, opts: RenderOpts): string {
  const failedHere = failsHere(block, opts.state);
  const prefill = block.form.values
    ? { action: action.name, values: block.form.values, issues: [] }
    : undefined;
  const form = actionForm(action, {
    path: opts.path,
    csrf: opts.csrf,
    fixed: block.form.fixed,
    only: block.form.fields ?? (block.form.style === "block" ? fields(action.params).map((f) => f.name) : []),
    label: block.form.label,
    choices: block.form.choices,
    disabled: block.form.disabled,
    nested: block.form.nested,
    inline: block.form.style === undefined || block.form.style === "inline",
    state: failedHere ? opts.state : prefill,
    reconfirm: opts.reconfirm?.has(action.name),
  });
  return block.form.style === "folded"
    ? `<details class="folded${block.form.depth ? ` depth-${block.form.depth}` : ""}"${failedHere ? " open" : ""}><summary>${escapeHtml(block.form.label)}</summary>${form}</details>`
    : form;
}
