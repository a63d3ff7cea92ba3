// Markdown to HTML (raw HTML escaped, unsafe links dropped), and every action as a form
// generated from its schema; page-html.ts places them in a page.
import type { Tokens } from "marked";
import type { z } from "zod";
import type { Issue } from "../../lib/errors.ts";
import { boundedMarked } from "./bounded-marked.ts";
import { type Field, fields, humanize, labelOf } from "./params.ts";
import type { ActionDef } from "./types.ts";

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

// `/\host` is `//host` to a browser: a path must not start with either.
const SAFE_HREF = /^(https?:|mailto:|\/(?![/\\])|#|\?)/i;
const EXTERNAL = /^(https?|mailto):/i;

/** The link's text says where it goes already (an autolink, or the URL written out). */
function showsDestination(text: string, href: string): boolean {
  const bare = (s: string) => s.replace(/^(https?:\/\/|mailto:)/i, "").replace(/\/$/, "");
  return bare(text) === bare(href);
}

/**
 * A link out of the workspace (written by a person or an agent: our own links are paths)
 * opens with no referrer, no opener and no endorsement, and shows its whole destination
 * (host, path and query) beside its text before anyone clicks: a query that carries a
 * secret to an outside host is there to be read, not hidden behind "the report". The
 * query is kept rather than dropped, since real links need theirs (a search, a document).
 */
function externalLink(href: string, text: string, plain: string, title: string): string {
  const rel = ' rel="noopener noreferrer nofollow"';
  const destination = showsDestination(plain, href)
    ? ""
    : ` <span class="link-destination">(${escapeHtml(href)})</span>`;
  return `<a href="${escapeHtml(href)}"${title}${rel} class="external">${text}</a>${destination}`;
}

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
      if (EXTERNAL.test(token.href)) return externalLink(token.href, text, token.text, title);
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

/** Statuses pages write in bold (`**failed**`): a browser shows each in its colour. */
const STATUS_WORDS =
  /<strong>(queued|running|waiting|completed|failed|cancelled|timed_out|skipped|pending|approved|executed|rejected|expired|archived|paused)<\/strong>/g;

export function markdownToHtml(md: string): string {
  // A wide table scrolls inside its card instead of running under the actions panel.
  return marked
    .parse(md)
    .replace(/<table>/g, '<div class="table-wrap"><table>')
    .replace(/<\/table>/g, "</table></div>")
    .replace(STATUS_WORDS, '<strong class="status status-$1">$1</strong>');
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

export interface Choice {
  value: string;
  label: string;
  /** Choices with a group are shown under its heading (`<optgroup>`), in the order groups first appear. */
  group?: string;
}

/** A select's options, the grouped ones under their group's heading. */
function optionsHtml(choices: Choice[], selected: string): string {
  const option = (o: Choice) =>
    `<option value="${escapeHtml(o.value)}"${selected === o.value ? " selected" : ""}>${escapeHtml(o.label)}</option>`;
  const out: string[] = [];
  const groups = new Map<string, Choice[]>();
  for (const o of choices) {
    if (!o.group) out.push(option(o));
    else if (groups.has(o.group)) groups.get(o.group)!.push(o);
    else groups.set(o.group, [o]);
  }
  for (const [g, list] of groups)
    out.push(`<optgroup label="${escapeHtml(g)}">${list.map(option).join("")}</optgroup>`);
  return out.join("");
}

/** "20,000": a limit as a person reads it. */
export const count = (n: number) => n.toLocaleString("en-US");

/**
 * A text field's limit, said before it bites: `maxlength` for the browser, and a line that
 * names it, which public/forms.js turns into a live count as the person types.
 */
function limitOf(f: Field, id: string, shown: boolean): { attr: string; note: string; describes?: string } {
  if (!f.maxLength || f.secret) return { attr: "", note: "" };
  const attr = ` maxlength="${f.maxLength}"`;
  if (!shown) return { attr, note: "" };
  return {
    attr,
    note: `<small class="count" id="${id}-count" data-count-for="${id}" data-max="${f.maxLength}">Up to ${count(f.maxLength)} characters</small>`,
    describes: `${id}-count`,
  };
}

function fieldInput(
  f: Field,
  value: unknown,
  formId: string,
  opts: { choices?: Choice[]; error?: string; inline?: boolean; disabled?: string } = {},
): string {
  const { choices, error, disabled } = opts;
  const id = `${formId}-${f.name}`;
  const v = value === undefined || value === null ? (f.defaultValue ?? "") : value;
  const req = f.required && f.type !== "boolean" ? " required" : "";
  // Beside content (a Reply form) a one-line field's limit stays an attribute; a text area's is said.
  // A select's choices are within the limit already: no count to show under it.
  const limit = choices ? { attr: "", note: "" } : limitOf(f, id, !opts.inline || f.multiline);
  // The message sits at its field and the field points at it, so a screen reader reads both.
  const describedBy = [error ? `${id}-error` : "", limit.describes ?? ""].filter(Boolean).join(" ");
  const invalid =
    (error ? ' aria-invalid="true"' : "") + (describedBy ? ` aria-describedby="${describedBy}"` : "");
  const label = `${escapeHtml(labelOf(f))}${f.required || f.type === "boolean" ? "" : ' <span class="optional">optional</span>'}`;
  // A select drawn from the data explains itself; the hint (written for callers who type the value) would not.
  const help =
    f.description && !choices && !f.optionLabels ? `<small>${escapeHtml(f.description)}</small>` : "";
  const err = error ? `<p class="field-error" id="${id}-error">${escapeHtml(error)}</p>` : "";
  // Greyed out, saying why: a choice the page shows but this form may not make.
  const why = disabled ? `<small class="disabled-why">${escapeHtml(disabled)}</small>` : "";
  if (f.type === "boolean") {
    const checked = v === true || v === "true" || v === "on" ? " checked" : "";
    const off = disabled ? " disabled" : "";
    return `<label class="check${off}" for="${id}"><input type="checkbox" id="${id}" name="${f.name}" value="true"${checked}${invalid}${off}> ${label}</label>${why || help}${err}`;
  }
  let control: string;
  if (f.secret) {
    control = `<input type="password" id="${id}" name="${f.name}" value="" autocomplete="off"${req}${invalid}>`;
  } else if (choices) {
    control = `<select id="${id}" name="${f.name}"${req}${invalid}>${optionsHtml(choices, String(v))}</select>`;
  } else if (f.type === "enum") {
    const opts = f.options!.map(
      (o) =>
        `<option value="${escapeHtml(o)}"${String(v) === o ? " selected" : ""}>${escapeHtml(f.optionLabels?.[o] ?? o)}</option>`,
    );
    control = `<select id="${id}" name="${f.name}"${req}${invalid}>${opts.join("")}</select>`;
  } else if (f.multiline) {
    control = `<textarea id="${id}" name="${f.name}" rows="4"${limit.attr}${req}${invalid}>${escapeHtml(String(v))}</textarea>`;
  } else {
    const type = f.type === "number" ? "number" : "text";
    const step = f.type === "number" ? ' step="any"' : "";
    control = `<input type="${type}"${step} id="${id}" name="${f.name}" value="${escapeHtml(String(v))}"${limit.attr}${req}${invalid}>`;
  }
  if (disabled) {
    // A disabled control is not sent: its value is, so the form still saves as a whole.
    control = `${control.replace(/^<(select|input|textarea)/, "<$1 disabled")}<input type="hidden" name="${f.name}" value="${escapeHtml(String(v))}">`;
    return `<label for="${id}">${label}</label>${control}${why}${err}`;
  }
  return `<label for="${id}">${label}</label>${control}${limit.note}${help}${err}`;
}

/** What went wrong that no field shown here can carry (the request as a whole, a fixed param), named by label. */
function issuesHtml(issues: Issue[]): string {
  if (!issues.length) return "";
  const items = issues.map((i) =>
    i.label || i.field
      ? `<li data-field="${escapeHtml(i.field)}"><strong>${escapeHtml(i.label ?? i.field)}</strong>: ${escapeHtml(i.message)}</li>`
      : `<li>${escapeHtml(i.message)}</li>`,
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
  /** Object params filled in as the fields of another schema (FormBlock `nested`). */
  nested?: Record<string, z.ZodObject>;
  /** Fields shown greyed out, with why (a capability the workspace keeps for people). */
  disabled?: Record<string, string>;
}

/** The params' issues by the field they belong to (`params.text` is the `params` field's). */
function issuesByField(issues: Issue[], shown: Set<string>) {
  const at = new Map<string, string>();
  const rest: Issue[] = [];
  for (const i of issues) {
    const [top, ...path] = i.field.split(".");
    // A nested field shown on its own (`params.text`) carries its issue itself.
    if (shown.has(i.field) && !at.has(i.field)) at.set(i.field, i.message);
    else if (top && shown.has(top) && !at.has(top))
      at.set(top, path.length ? `${path.join(".")}: ${i.message}` : i.message);
    else rest.push(i);
  }
  return { at, rest };
}

/**
 * An action as a form. It posts to the page it is on (naming the action in `_action`), so a
 * mistake shows that page again, at its own address, with the message at the field.
 */
export function actionForm(a: ActionDef, o: FormOpts): string {
  const formId = `f-${a.name}-${Object.values(o.fixed ?? {}).join("-")}`.replace(/[^a-z0-9_-]/gi, "");
  const state = o.state?.action === a.name ? o.state : undefined;
  const hidden = [
    `<input type="hidden" name="_csrf" value="${escapeHtml(o.csrf)}">`,
    `<input type="hidden" name="_action" value="${a.name}">`,
    ...Object.entries(o.fixed ?? {}).map(
      ([k, v]) => `<input type="hidden" name="${k}" value="${escapeHtml(v)}">`,
    ),
  ];
  const visible = fields(a.params).filter(
    (f) => !(f.name in (o.fixed ?? {})) && (o.only ? o.only.includes(f.name) : !f.pickedBeside),
  );
  const nestedNames = visible.flatMap((f) =>
    o.nested?.[f.name] ? fields(o.nested[f.name]!).map((n) => `${f.name}.${n.name}`) : [],
  );
  const shown = new Set([...visible.map((f) => f.name), ...nestedNames]);
  const { at, rest } = issuesByField(state?.issues ?? [], shown);
  // Inline forms sit beside content: their params explain themselves, so no help text.
  const inputs = visible.map((f) => {
    const inner = o.nested?.[f.name];
    if (inner) return nestedInputs(f, inner, state?.values ?? {}, formId, at);
    const field = o.inline ? { ...f, description: undefined } : f;
    const error = at.get(f.name);
    const input = fieldInput(field, state?.values[f.name], formId, {
      choices: o.choices?.[f.name],
      error,
      inline: o.inline,
      disabled: o.disabled?.[f.name],
    });
    return `<div class="field field-${f.type}${error ? " has-error" : ""}">${input}</div>`;
  });
  grouped(visible, inputs);
  const label = escapeHtml(o.label ?? humanize(a.name));
  const cls = `action-form${o.inline ? " inline" : ""}${a.destructive ? " destructive" : ""}`;
  const button = `<button type="submit" name="_submit" value="1"${a.destructive ? ' class="danger"' : ""}>${label}</button>`;
  return `<form method="post" action="${escapeHtml(o.path)}" class="${cls}" id="${formId}" data-action="${a.name}">${issuesHtml(rest)}${hidden.join("")}${inputs.join("")}${button}</form>`;
}

/**
 * An object param as the fields of the schema it holds, each named `<param>.<field>` (a form
 * sends them so: registry/params.ts folds them back into the object). A field picked beside
 * the content (which comment a reply answers) is kept as it was, never typed.
 */
function nestedInputs(
  f: Field,
  schema: z.ZodObject,
  values: Record<string, unknown>,
  formId: string,
  at: Map<string, string>,
): string {
  const whole = (values[f.name] ?? {}) as Record<string, unknown>;
  const parts = fields(schema).map((sf) => {
    const name = `${f.name}.${sf.name}`;
    const value = name in values ? values[name] : whole[sf.name];
    if (sf.pickedBeside)
      return value === undefined || value === null
        ? ""
        : `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(String(value))}">`;
    const error = at.get(name);
    const input = fieldInput({ ...sf, name, label: labelOf(sf) }, value, formId, { error });
    return `<div class="field field-${sf.type}${error ? " has-error" : ""}">${input}</div>`;
  });
  return `<fieldset class="group nested"><legend>${escapeHtml(labelOf(f))}</legend>${parts.join("")}</fieldset>`;
}

/** Consecutive fields of one group become one fieldset under the group's name (in place). */
function grouped(visible: Field[], inputs: string[]) {
  for (let i = visible.length - 1; i >= 0; i--) {
    const g = visible[i]!.group;
    if (!g || visible[i - 1]?.group === g) continue;
    let end = i;
    while (visible[end + 1]?.group === g) end++;
    const body = inputs.slice(i, end + 1).join("");
    inputs.splice(
      i,
      end - i + 1,
      `<fieldset class="group"><legend>${escapeHtml(g)}</legend>${body}</fieldset>`,
    );
  }
}

/**
 * The step between a destructive action's first POST and the one that runs it: what it will
 * do (and on what, when the action can say: `confirmText`), and a real button that sends the
 * same params again with `_confirm=yes`. What the person may still say (a rejection's reason)
 * is a field here, asked now; what they picked beside the content rides along hidden.
 */
export function confirmForm(
  a: ActionDef,
  o: { path: string; csrf: string; values: Record<string, unknown>; label: string; what?: string | null },
): string {
  const asked = fields(a.params).filter((f) => !f.pickedBeside);
  const askedNames = new Set(asked.map((f) => f.name));
  const hidden = [
    ["_csrf", o.csrf],
    ["_action", a.name],
    ["_confirm", "yes"],
    ...Object.entries(o.values)
      .filter(([k]) => !askedNames.has(k))
      .flatMap(([k, v]) =>
        (Array.isArray(v) ? v : [v]).filter((x) => x !== undefined).map((x) => [k, String(x)]),
      ),
  ].map(([k, v]) => `<input type="hidden" name="${escapeHtml(k!)}" value="${escapeHtml(v!)}">`);
  const formId = `confirm-${a.name}`;
  const inputs = asked.map(
    (f) => `<div class="field field-${f.type}">${fieldInput(f, o.values[f.name], formId)}</div>`,
  );
  const what = o.what ? `<p class="confirm-what">${escapeHtml(o.what)}</p>` : "";
  return `<section class="confirm" role="alertdialog" aria-labelledby="confirm-title"><h2 id="confirm-title">${escapeHtml(humanize(a.name))}?</h2>${what}<p>${escapeHtml(a.destructive ?? "")}</p><form method="post" action="${escapeHtml(o.path)}" data-action="${a.name}" class="confirm-form action-form">${hidden.join("")}${inputs.join("")}<button type="submit" class="danger">Yes, ${escapeHtml(o.label.charAt(0).toLowerCase() + o.label.slice(1))}</button> <a class="cancel" href="${escapeHtml(o.path)}">Cancel</a></form></section>`;
}
