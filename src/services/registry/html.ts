// Markdown to HTML (raw HTML escaped, unsafe links dropped), and every action as a form
// generated from its schema; page-html.ts places them in a page.
import type { Tokens } from "marked";
import type { z } from "zod";
import type { Issue } from "../../lib/errors.ts";
import { boundedMarked } from "./bounded-marked.ts";
import { type Field, fields, humanize, labelOf } from "./params.ts";
import { RECONFIRM_FIELD, RECONFIRM_LABEL } from "./step-up.ts";
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
  const bare = (link: string) => link.replace(/^(https?:\/\/|mailto:)/i, "").replace(/\/$/, "");
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

export function markdownToHtml(markdown: string): string {
  // A wide table scrolls inside its card instead of running under the actions panel.
  return marked
    .parse(markdown)
    .replace(/<table>/g, '<div class="table-wrap"><table>')
    .replace(/<\/table>/g, "</table></div>")
    .replace(STATUS_WORDS, '<strong class="status status-$1">$1</strong>');
}

/** One line of markdown as inline HTML: what a `<summary>` or a `<p>` of our own holds. */
export function inlineHtml(markdown: string): string {
  return markdownToHtml(markdown)
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
  const option = (choice: Choice) =>
    `<option value="${escapeHtml(choice.value)}"${selected === choice.value ? " selected" : ""}>${escapeHtml(choice.label)}</option>`;
  const out: string[] = [];
  const groups = new Map<string, Choice[]>();
  for (const choice of choices) {
    if (!choice.group) out.push(option(choice));
    else if (groups.has(choice.group)) groups.get(choice.group)!.push(choice);
    else groups.set(choice.group, [choice]);
  }
  for (const [group, list] of groups)
    out.push(`<optgroup label="${escapeHtml(group)}">${list.map(option).join("")}</optgroup>`);
  return out.join("");
}

/** "20,000": a limit as a person reads it. */
export const count = (quantity: number) => quantity.toLocaleString("en-US");

/**
 * A text field's limit, said before it bites: `maxlength` for the browser, and a line that
 * names it, which public/forms.js turns into a live count as the person types.
 */
function limitOf(
  field: Field,
  id: string,
  shown: boolean,
): { attr: string; note: string; describes?: string } {
  if (!field.maxLength || field.secret) return { attr: "", note: "" };
  const attr = ` maxlength="${field.maxLength}"`;
  if (!shown) return { attr, note: "" };
  return {
    attr,
    note: `<small class="count" id="${id}-count" data-count-for="${id}" data-max="${field.maxLength}">Up to ${count(field.maxLength)} characters</small>`,
    describes: `${id}-count`,
  };
}

/** A number field's range and step from its schema, as `maxlength` is for text: the browser says it before the server must. */
function numberAttrs(field: Field): string {
  const range = `${field.min !== undefined ? ` min="${field.min}"` : ""}${field.max !== undefined ? ` max="${field.max}"` : ""}`;
  return ` step="${field.whole ? 1 : "any"}"${range}`;
}

function fieldInput(
  field: Field,
  value: unknown,
  formId: string,
  opts: { choices?: Choice[]; error?: string; inline?: boolean; disabled?: string; mentions?: string } = {},
): string {
  const { choices, error, disabled } = opts;
  const id = `${formId}-${field.name}`;
  const initial = value === undefined || value === null ? (field.defaultValue ?? "") : value;
  const req = field.required && field.type !== "boolean" ? " required" : "";
  // Beside content (a Reply form) a one-line field's limit stays an attribute; a text area's is said.
  // A select's choices are within the limit already: no count to show under it.
  const limit = choices ? { attr: "", note: "" } : limitOf(field, id, !opts.inline || field.multiline);
  // The message sits at its field and the field points at it, so a screen reader reads both.
  const describedBy = [error ? `${id}-error` : "", limit.describes ?? ""].filter(Boolean).join(" ");
  const invalid =
    (error ? ' aria-invalid="true"' : "") + (describedBy ? ` aria-describedby="${describedBy}"` : "");
  const label = `${escapeHtml(labelOf(field))}${field.required || field.type === "boolean" ? "" : ' <span class="optional">optional</span>'}`;
  // A select drawn from the data explains itself; the hint (written for callers who type the value) would not.
  const help =
    field.description && !choices && !field.optionLabels
      ? `<small>${escapeHtml(field.description)}</small>`
      : "";
  const err = error ? `<p class="field-error" id="${id}-error">${escapeHtml(error)}</p>` : "";
  // Greyed out, saying why: a choice the page shows but this form may not make.
  const why = disabled ? `<small class="disabled-why">${escapeHtml(disabled)}</small>` : "";
  if (field.type === "boolean") {
    const checked = initial === true || initial === "true" || initial === "on" ? " checked" : "";
    const off = disabled ? " disabled" : "";
    return `<label class="check${off}" for="${id}"><input type="checkbox" id="${id}" name="${field.name}" value="true"${checked}${invalid}${off}> ${label}</label>${why || help}${err}`;
  }
  let control: string;
  if (field.secret) {
    control = `<input type="password" id="${id}" name="${field.name}" value="" autocomplete="off"${req}${invalid}>`;
  } else if (choices) {
    control = `<select id="${id}" name="${field.name}"${req}${invalid}>${optionsHtml(choices, String(initial))}</select>`;
  } else if (field.type === "enum") {
    const opts = field.options!.map(
      (option) =>
        `<option value="${escapeHtml(option)}"${String(initial) === option ? " selected" : ""}>${escapeHtml(field.optionLabels?.[option] ?? option)}</option>`,
    );
    control = `<select id="${id}" name="${field.name}"${req}${invalid}>${opts.join("")}</select>`;
  } else if (field.multiline) {
    const mentions = field.mentions && opts.mentions ? ` data-mentions="${escapeHtml(opts.mentions)}"` : "";
    control = `<textarea id="${id}" name="${field.name}" rows="4"${limit.attr}${req}${invalid}${mentions}>${escapeHtml(String(initial))}</textarea>`;
  } else {
    const type = field.type === "number" ? "number" : "text";
    const step = field.type === "number" ? numberAttrs(field) : "";
    control = `<input type="${type}"${step} id="${id}" name="${field.name}" value="${escapeHtml(String(initial))}"${limit.attr}${req}${invalid}>`;
  }
  if (disabled) {
    // A disabled control is not sent: its value is, so the form still saves as a whole.
    control = `${control.replace(/^<(select|input|textarea)/, "<$1 disabled")}<input type="hidden" name="${field.name}" value="${escapeHtml(String(initial))}">`;
    return `<label for="${id}">${label}</label>${control}${why}${err}`;
  }
  return `<label for="${id}">${label}</label>${control}${limit.note}${help}${err}`;
}

/** A field shown only with another's values (Field `shownWith`): public/forms.js reads these. */
const shownWithAttrs = ({ shownWith }: Field) =>
  shownWith
    ? ` data-shown-with="${escapeHtml(shownWith.field)}" data-shown-values="${escapeHtml(shownWith.values.join(" "))}"`
    : "";

/** What went wrong that no field shown here can carry (the request as a whole, a fixed param), named by label. */
function issuesHtml(issues: Issue[]): string {
  if (!issues.length) return "";
  const items = issues.map((issue) =>
    issue.label || issue.field
      ? `<li data-field="${escapeHtml(issue.field)}"><strong>${escapeHtml(issue.label ?? issue.field)}</strong>: ${escapeHtml(issue.message)}</li>`
      : `<li>${escapeHtml(issue.message)}</li>`,
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
  /** The session must re-confirm before this action runs: the form asks for it (registry/step-up.ts). */
  reconfirm?: boolean;
}

/**
 * The field a session re-confirms with: a password input, never prefilled (a mistake shows
 * the form again without it), its problem at it. Not a param: it is checked before the action.
 */
function reconfirmInput(formId: string, error?: string): string {
  const id = `${formId}-reconfirm`;
  const described = error ? `${id}-error ${id}-why` : `${id}-why`;
  const err = error ? `<p class="field-error" id="${id}-error">${escapeHtml(error)}</p>` : "";
  return `<div class="field field-reconfirm${error ? " has-error" : ""}"><label for="${id}">${RECONFIRM_LABEL}</label><input type="password" id="${id}" name="${RECONFIRM_FIELD}" value="" autocomplete="current-password" required${error ? ' aria-invalid="true"' : ""} aria-describedby="${described}"><small id="${id}-why">A sensitive change: confirm it is you, as you last did a while ago.</small>${err}</div>`;
}

/** The params' issues by the field they belong to (`params.text` is the `params` field's). */
function issuesByField(issues: Issue[], shown: Set<string>) {
  const fieldIssues = new Map<string, string>();
  const rest: Issue[] = [];
  for (const issue of issues) {
    const [top, ...path] = issue.field.split(".");
    // A nested field shown on its own (`params.text`) carries its issue itself.
    if (shown.has(issue.field) && !fieldIssues.has(issue.field)) fieldIssues.set(issue.field, issue.message);
    else if (top && shown.has(top) && !fieldIssues.has(top))
      fieldIssues.set(top, path.length ? `${path.join(".")}: ${issue.message}` : issue.message);
    else rest.push(issue);
  }
  return { fieldIssues, rest };
}

/**
 * Where a composer on `path` asks who may be mentioned (routes/mentionable.ts): in a studio's
 * pages, that studio's people and the agents a mention there wakes.
 */
function mentionsUrl(path: string): string {
  const studio = /^\/studios\/([a-z0-9_-]+)/.exec(path)?.[1];
  return `/mentionable.json${studio ? `?studio=${studio}` : ""}`;
}

/**
 * An action as a form. It posts to the page it is on (naming the action in `_action`), so a
 * mistake shows that page again, at its own address, with the message at the field.
 */
export function actionForm(action: ActionDef, options: FormOpts): string {
  const formId = `f-${action.name}-${Object.values(options.fixed ?? {}).join("-")}`.replace(
    /[^a-z0-9_-]/gi,
    "",
  );
  const state = options.state?.action === action.name ? options.state : undefined;
  const hidden = [
    `<input type="hidden" name="_csrf" value="${escapeHtml(options.csrf)}">`,
    `<input type="hidden" name="_action" value="${action.name}">`,
    ...Object.entries(options.fixed ?? {}).map(
      ([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`,
    ),
  ];
  const visible = fields(action.params).filter(
    (field) =>
      !(field.name in (options.fixed ?? {})) &&
      (options.only ? options.only.includes(field.name) : !field.pickedBeside),
  );
  const nestedNames = visible.flatMap((field) =>
    options.nested?.[field.name]
      ? fields(options.nested[field.name]!).map((n) => `${field.name}.${n.name}`)
      : [],
  );
  // A destructive action asks in its confirmation step instead, where it runs (confirmForm).
  const asks = Boolean(options.reconfirm && !action.destructive);
  const shown = new Set([...visible.map((f) => f.name), ...nestedNames, ...(asks ? [RECONFIRM_FIELD] : [])]);
  const { fieldIssues, rest } = issuesByField(state?.issues ?? [], shown);
  // Inline forms sit beside content: their params explain themselves, so no help text.
  const inputs = visible.map((field) => {
    const inner = options.nested?.[field.name];
    if (inner) return nestedInputs(field, inner, state?.values ?? {}, formId, fieldIssues);
    const shownField = options.inline ? { ...field, description: undefined } : field;
    const error = fieldIssues.get(field.name);
    const input = fieldInput(shownField, state?.values[field.name], formId, {
      choices: options.choices?.[field.name],
      error,
      inline: options.inline,
      disabled: options.disabled?.[field.name],
      mentions: mentionsUrl(options.path),
    });
    return `<div class="field field-${field.type}${error ? " has-error" : ""}"${shownWithAttrs(field)}>${input}</div>`;
  });
  grouped(visible, inputs);
  if (asks) inputs.push(reconfirmInput(formId, fieldIssues.get(RECONFIRM_FIELD)));
  const label = escapeHtml(options.label ?? humanize(action.name));
  const cls = `action-form${options.inline ? " inline" : ""}${action.destructive ? " destructive" : ""}`;
  const button = `<button type="submit" name="_submit" value="1"${action.destructive ? ' class="danger"' : ""}>${label}</button>`;
  return `<form method="post" action="${escapeHtml(options.path)}" class="${cls}" id="${formId}" data-action="${action.name}">${issuesHtml(rest)}${hidden.join("")}${inputs.join("")}${button}</form>`;
}

/**
 * An object param as the fields of the schema it holds, each named `<param>.<field>` (a form
 * sends them so: registry/params.ts folds them back into the object). A field picked beside
 * the content (which comment a reply answers) is kept as it was, never typed.
 */
function nestedInputs(
  field: Field,
  schema: z.ZodObject,
  values: Record<string, unknown>,
  formId: string,
  fieldIssues: Map<string, string>,
): string {
  const whole = (values[field.name] ?? {}) as Record<string, unknown>;
  const parts = fields(schema).map((subfield) => {
    const name = `${field.name}.${subfield.name}`;
    const value = name in values ? values[name] : whole[subfield.name];
    if (subfield.pickedBeside)
      return value === undefined || value === null
        ? ""
        : `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(String(value))}">`;
    const error = fieldIssues.get(name);
    const input = fieldInput({ ...subfield, name, label: labelOf(subfield) }, value, formId, { error });
    return `<div class="field field-${subfield.type}${error ? " has-error" : ""}">${input}</div>`;
  });
  return `<fieldset class="group nested"><legend>${escapeHtml(labelOf(field))}</legend>${parts.join("")}</fieldset>`;
}

/** Consecutive fields of one group become one fieldset under the group's name (in place). */
function grouped(visible: Field[], inputs: string[]) {
  for (let index = visible.length - 1; index >= 0; index--) {
    const group = visible[index]!.group;
    if (!group || visible[index - 1]?.group === group) continue;
    let end = index;
    while (visible[end + 1]?.group === group) end++;
    const body = inputs.slice(index, end + 1).join("");
    inputs.splice(
      index,
      end - index + 1,
      `<fieldset class="group"><legend>${escapeHtml(group)}</legend>${body}</fieldset>`,
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
  action: ActionDef,
  options: {
    path: string;
    csrf: string;
    values: Record<string, unknown>;
    label: string;
    what?: string | null;
    /** The session must re-confirm: asked here, where the action runs; `failed`, what went wrong last time. */
    reconfirm?: { failed?: string };
  },
): string {
  const asked = fields(action.params).filter((f) => !f.pickedBeside);
  const askedNames = new Set(asked.map((f) => f.name));
  const hidden = [
    ["_csrf", options.csrf],
    ["_action", action.name],
    ["_confirm", "yes"],
    ...Object.entries(options.values)
      .filter(([name]) => !askedNames.has(name))
      .flatMap(([name, value]) =>
        (Array.isArray(value) ? value : [value]).filter((x) => x !== undefined).map((x) => [name, String(x)]),
      ),
  ].map(([name, value]) => `<input type="hidden" name="${escapeHtml(name!)}" value="${escapeHtml(value!)}">`);
  const formId = `confirm-${action.name}`;
  const inputs = asked.map(
    (f) => `<div class="field field-${f.type}">${fieldInput(f, options.values[f.name], formId)}</div>`,
  );
  if (options.reconfirm) inputs.push(reconfirmInput(formId, options.reconfirm.failed));
  const what = options.what ? `<p class="confirm-what">${escapeHtml(options.what)}</p>` : "";
  return `<section class="confirm" role="alertdialog" aria-labelledby="confirm-title"><h2 id="confirm-title">${escapeHtml(humanize(action.name))}?</h2>${what}<p>${escapeHtml(action.destructive ?? "")}</p><form method="post" action="${escapeHtml(options.path)}" data-action="${action.name}" class="confirm-form action-form">${hidden.join("")}${inputs.join("")}<button type="submit" class="danger">Yes, ${escapeHtml(options.label.charAt(0).toLowerCase() + options.label.slice(1))}</button> <a class="cancel" href="${escapeHtml(options.path)}">Cancel</a></form></section>`;
}
