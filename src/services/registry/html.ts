// Page views to HTML: markdown blocks through `marked` (raw HTML escaped, unsafe links
// dropped), and every action as a form generated from its schema.
import type { Tokens } from "marked";
import type { Issue } from "../../lib/errors.ts";
import { boundedMarked } from "./bounded-marked.ts";
import { actionsBase } from "./markdown.ts";
import { type Field, fields } from "./params.ts";
import type { ActionDef, FormBlock, PageView } from "./types.ts";

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

const SAFE_HREF = /^(https?:|mailto:|\/(?!\/)|#|\?)/i;

const HEADING_ID = /\s*\{#([A-Za-z0-9_-]{1,64})\}\s*$/;

const marked = boundedMarked({
  gfm: true,
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag) {
      return escapeHtml(token.text);
    },
    link(token: Tokens.Link) {
      const text = this.parser.parseInline(token.tokens);
      if (!SAFE_HREF.test(token.href)) return text;
      const title = token.title ? ` title="${escapeHtml(token.title)}"` : "";
      return `<a href="${escapeHtml(token.href)}"${title}>${text}</a>`;
    },
    image(token: Tokens.Image) {
      return escapeHtml(token.text);
    },
    // `### Title {#id}` (Pandoc's attribute) gives the heading an anchor: a run links to
    // the subscription, schedule or webhook that woke it as `…/subscriptions#<id>`.
    heading(token: Tokens.Heading) {
      const html = this.parser.parseInline(token.tokens);
      const anchor = HEADING_ID.exec(html);
      const text = anchor ? html.slice(0, anchor.index) : html;
      return `<h${token.depth}${anchor ? ` id="${anchor[1]}"` : ""}>${text}</h${token.depth}>\n`;
    },
  },
});

export function markdownToHtml(md: string): string {
  // A wide table scrolls inside its card instead of running under the actions panel.
  return marked
    .parse(md)
    .replace(/<table>/g, '<div class="table-wrap"><table>')
    .replace(/<\/table>/g, "</table></div>");
}

/** One line of markdown as inline HTML: what a `<summary>` or a `<p>` of our own holds. */
export function inlineHtml(md: string): string {
  return markdownToHtml(md)
    .trim()
    .replace(/^<p>([\s\S]*)<\/p>$/, "$1");
}

export interface FormState {
  action: string;
  values: Record<string, unknown>;
  issues: Issue[];
}

const ACRONYMS: Record<string, string> = { api: "API", url: "URL", usd: "USD", id: "ID" };

/** `add_api_key` → "Add API key": a param or action name as a label. */
export function humanize(name: string): string {
  const s = name
    .split("_")
    .map((w) => ACRONYMS[w] ?? w)
    .join(" ");
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export interface Choice {
  value: string;
  label: string;
}

function fieldInput(f: Field, value: unknown, formId: string, choices?: Choice[]): string {
  const id = `${formId}-${f.name}`;
  const v = value === undefined || value === null ? (f.defaultValue ?? "") : value;
  const req = f.required && f.type !== "boolean" ? " required" : "";
  const label = `${escapeHtml(f.label ?? humanize(f.name))}${f.required || f.type === "boolean" ? "" : ' <span class="optional">optional</span>'}`;
  const help = f.description ? `<small>${escapeHtml(f.description)}</small>` : "";
  if (f.type === "boolean") {
    const checked = v === true || v === "true" || v === "on" ? " checked" : "";
    return `<label class="check" for="${id}"><input type="checkbox" id="${id}" name="${f.name}" value="true"${checked}> ${label}</label>${help}`;
  }
  let control: string;
  if (f.secret) {
    control = `<input type="password" id="${id}" name="${f.name}" value="" autocomplete="off"${req}>`;
  } else if (choices) {
    const opts = choices.map(
      (o) =>
        `<option value="${escapeHtml(o.value)}"${String(v) === o.value ? " selected" : ""}>${escapeHtml(o.label)}</option>`,
    );
    control = `<select id="${id}" name="${f.name}"${req}>${opts.join("")}</select>`;
  } else if (f.type === "enum") {
    const opts = f.options!.map(
      (o) =>
        `<option value="${escapeHtml(o)}"${String(v) === o ? " selected" : ""}>${escapeHtml(f.optionLabels?.[o] ?? o)}</option>`,
    );
    control = `<select id="${id}" name="${f.name}"${req}>${opts.join("")}</select>`;
  } else if (f.multiline) {
    control = `<textarea id="${id}" name="${f.name}" rows="4"${req}>${escapeHtml(String(v))}</textarea>`;
  } else {
    const type = f.type === "number" ? "number" : "text";
    control = `<input type="${type}" id="${id}" name="${f.name}" value="${escapeHtml(String(v))}"${req}>`;
  }
  return `<label for="${id}">${label}</label>${control}${help}`;
}

function issuesHtml(issues: Issue[]): string {
  if (!issues.length) return "";
  const items = issues.map(
    (i) => `<li>${i.field ? `<strong>${escapeHtml(i.field)}</strong>: ` : ""}${escapeHtml(i.message)}</li>`,
  );
  return `<div class="form-errors" role="alert"><ul>${items.join("")}</ul></div>`;
}

interface FormOpts {
  path: string;
  csrf: string;
  fixed?: Record<string, string>;
  only?: string[];
  label?: string;
  inline?: boolean;
  state?: FormState;
  /** Options for a select the schema cannot list (the keys you own). */
  choices?: Record<string, Choice[]>;
}

export function actionForm(a: ActionDef, o: FormOpts): string {
  const formId = `f-${a.name}-${Object.values(o.fixed ?? {}).join("-")}`.replace(/[^a-z0-9_-]/gi, "");
  const state = o.state?.action === a.name ? o.state : undefined;
  const hidden = [
    `<input type="hidden" name="_csrf" value="${escapeHtml(o.csrf)}">`,
    ...Object.entries(o.fixed ?? {}).map(
      ([k, v]) => `<input type="hidden" name="${k}" value="${escapeHtml(v)}">`,
    ),
  ];
  const visible = fields(a.params).filter(
    (f) => !(f.name in (o.fixed ?? {})) && (!o.only || o.only.includes(f.name)),
  );
  // Inline forms sit beside content: their params explain themselves, so no help text.
  const inputs = visible.map((f) => {
    const field = o.inline ? { ...f, description: undefined } : f;
    return `<div class="field field-${f.type}">${fieldInput(field, state?.values[f.name], formId, o.choices?.[f.name])}</div>`;
  });
  const label = escapeHtml(o.label ?? humanize(a.name));
  const cls = o.inline ? "action-form inline" : "action-form";
  return `<form method="post" action="${actionsBase(o.path)}/${a.name}" class="${cls}" id="${formId}">${issuesHtml(state?.issues ?? [])}${hidden.join("")}${inputs.join("")}<button type="submit" name="_submit" value="1">${label}</button></form>`;
}

export function renderPageHtml(
  view: PageView,
  actions: ActionDef[],
  opts: { path: string; csrf: string; state?: FormState },
): { content: string; actions: string } {
  const byName = new Map(actions.map((a) => [a.name, a]));
  const inline = view.blocks.filter((b): b is FormBlock => "form" in b && byName.has(b.form.action));
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
  const besideOnly = (a: ActionDef) => fields(a.params).some((f) => f.pickedBeside);
  const shown = actions.filter(
    (a) => (!covered.has(a.name) && !besideOnly(a)) || opts.state?.action === a.name,
  );
  const panel = shown
    .map((a, i) => {
      // The first action (and the one that just failed) is open; the rest fold away so the panel stays short.
      const open = opts.state ? opts.state.action === a.name : i === 0 || shown.length <= 2;
      const skip = hidden.get(a.name);
      const only = skip
        ? fields(a.params)
            .map((f) => f.name)
            .filter((n) => !skip.has(n))
        : undefined;
      if (!fields(a.params).length) {
        // Nothing to fill in: one button that says what it does.
        const button = actionForm(a, {
          path: opts.path,
          csrf: opts.csrf,
          state: opts.state,
          label: a.description,
        });
        return `<div class="action simple" id="action-${a.name}">${button}</div>`;
      }
      const form = actionForm(a, { path: opts.path, csrf: opts.csrf, state: opts.state, only });
      return `<details class="action" id="action-${a.name}"${open ? " open" : ""}><summary>${escapeHtml(a.description)}</summary>${form}</details>`;
    })
    .join("\n");
  return { content, actions: panel };
}

function inlineForm(
  a: ActionDef,
  b: FormBlock,
  opts: { path: string; csrf: string; state?: FormState },
): string {
  const failedHere =
    opts.state?.action === a.name &&
    Object.entries(b.form.fixed).every(([k, v]) => opts.state?.values[k] === v);
  const prefill = b.form.values ? { action: a.name, values: b.form.values, issues: [] } : undefined;
  const form = actionForm(a, {
    path: opts.path,
    csrf: opts.csrf,
    fixed: b.form.fixed,
    only: b.form.fields ?? (b.form.style === "block" ? undefined : []),
    label: b.form.label,
    choices: b.form.choices,
    inline: b.form.style === undefined || b.form.style === "inline",
    state: failedHere ? opts.state : prefill,
  });
  return b.form.style === "folded"
    ? `<details class="folded"${failedHere ? " open" : ""}><summary>${escapeHtml(b.form.label)}</summary>${form}</details>`
    : form;
}
