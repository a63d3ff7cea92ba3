// Plain functions from a page view to markdown: no request, no response.
import { ValidationError } from "../../lib/errors.ts";
import { fields, signature } from "./params.ts";
import type { ActionDef, Crumb, PageView } from "./types.ts";

/** Escapes text placed inline in markdown (titles, names) so it cannot form links or headings. */
export function mdEscape(text: string): string {
  return text.replace(/[\\`*_{}[\]()<>#+!|~]/g, "\\$&").replace(/\r\n|\r|\n/g, " ");
}

/**
 * Content written by someone else, as a blockquote: it keeps its formatting but can
 * never open a top-level heading such as a fake `## Actions`.
 */
export function quote(text: string): string {
  const body = text.trim() || "_(empty)_";
  return body
    .split(/\r\n|\r|\n/)
    .map((l) => `> ${l}`)
    .join("\n");
}

/** Raw text in a fenced block: shown as written, never rendered, whatever backticks it holds. */
export function fenced(text: string, lang = ""): string {
  return `~~~~${lang}\n${text.replace(/~{4,}/g, "~~~")}\n~~~~`;
}

/**
 * Text as inline code (a model id, a key hint). Backslash escapes are literal inside a
 * code span, so mdEscape would show `my\_model`; only a table's `|` needs escaping there,
 * and a backtick cannot be escaped at all, so it becomes a quote.
 */
export function code(text: string): string {
  return `\`${text
    .replace(/`/g, "'")
    .replace(/\|/g, "\\|")
    .replace(/\r\n|\r|\n/g, " ")}\``;
}

export function link(label: string, path: string): string {
  return `[${mdEscape(label)}](${path})`;
}

export function breadcrumbLine(crumbs: Crumb[]): string {
  return crumbs.map((c) => (c.path ? link(c.label, c.path) : mdEscape(c.label))).join(" › ");
}

export function actionLine(action: ActionDef): string {
  return `- \`${action.name}\` (${signature(action.params)}) — ${action.description}`;
}

export function renderPageMarkdown(
  view: PageView,
  actions: ActionDef[],
  path: string,
  notice?: string,
  /** Markdown of its own under the notice (how to use a secret just shown), not in bold. */
  help?: string,
): string {
  const parts = [`# ${mdEscape(view.title)}`, breadcrumbLine(view.breadcrumb)];
  if (notice) parts.push(`**${notice}**`);
  if (help) parts.push(help);
  for (const block of view.blocks) if ("md" in block && block.md.trim()) parts.push(block.md.trim());
  parts.push("## Actions");
  const offers = view.offers;
  const offered = offers ? actions.filter((action) => offers.includes(action.name)) : actions;
  if (offered.length) {
    parts.push(offered.map(actionLine).join("\n"));
    parts.push(
      `_Describe one with \`GET ${actionsBase(path)}/<name>\`; run it with \`POST ${actionsBase(path)}/<name>\` and a JSON or form body._`,
    );
  } else parts.push("_No actions on this page._");
  return `${parts.join("\n\n")}\n`;
}

/**
 * The `## Actions` section renderPageMarkdown ends a page with, read back (its reader beside
 * its writer): where it starts, and each action line with the action's name. Null without one.
 */
export function actionsSection(
  markdown: string,
): { at: number; lines: { name: string; line: string }[] } | null {
  const start = markdown.lastIndexOf("\n## Actions\n");
  if (start < 0) return null;
  const lines = markdown
    .slice(start)
    .split("\n")
    .flatMap((line) => {
      const name = /^- `([a-z_]+)` \(/.exec(line)?.[1];
      return name ? [{ name, line }] : [];
    });
  return { at: start, lines };
}

export function actionsBase(path: string): string {
  return `${path === "/" ? "" : path}/actions`;
}

export function renderActionMarkdown(action: ActionDef, path: string, crumbs: Crumb[]): string {
  const rows = fields(action.params).map(
    (field) =>
      `| ${field.name} | ${field.type === "enum" ? field.options!.join(" \\| ") : field.type} | ${field.required ? "yes" : "no"} | ${mdEscape(field.description ?? "")} |`,
  );
  return [
    `# Action: ${action.name}`,
    breadcrumbLine([...crumbs, { label: action.name }]),
    action.description,
    `Run it with \`POST ${actionsBase(path)}/${action.name}\` and a JSON or form body.`,
    rows.length
      ? ["| param | type | required | description |", "|---|---|---|---|", ...rows].join("\n")
      : "_This action takes no parameters._",
    "",
  ].join("\n\n");
}

export const ERROR_TITLES: Record<number, string> = {
  400: "Bad request",
  401: "Not signed in",
  403: "Not allowed",
  404: "Not found",
  405: "Method not allowed",
  406: "Not acceptable",
  409: "Conflict",
  413: "Too large",
  415: "Unsupported body",
  429: "Too many requests",
  500: "Something went wrong",
  503: "Temporarily unavailable",
};

export function errorMarkdown(status: number, message: string, err?: unknown): string {
  const lines = [`# Error ${status}: ${ERROR_TITLES[status] ?? "Error"}`, ""];
  if (err instanceof ValidationError) {
    lines.push(
      "Invalid parameters:",
      "",
      ...err.issues.map((i) => `- ${i.field ? `\`${i.field}\`: ` : ""}${i.message}`),
    );
  } else lines.push(message);
  return `${lines.join("\n")}\n`;
}
