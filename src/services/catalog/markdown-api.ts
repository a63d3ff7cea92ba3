// The internal markdown API: what server-side agents read and call, in process. It is
// the registry plus the same renderers the HTTP routes use, so an agent sees exactly
// the markdown an external agent gets over HTTP, without the HTTP hop.
import { AppError } from "../../lib/errors.ts";
import { errorMarkdown, renderPageMarkdown } from "../registry/markdown.ts";
import type { RunOptions } from "../registry/registry.ts";
import type { ActionOutcome, Ctx, Query } from "../registry/types.ts";
import { registry } from "./catalog.ts";

export interface MarkdownPage {
  status: number;
  path: string;
  markdown: string;
  /** Names of the actions the actor can use here. */
  actions: string[];
  /** Every action the page has, usable or not (a refused one answers with its reason). */
  pageActions: string[];
}

export function splitUrl(url: string): { path: string; query: Query } {
  const u = new URL(url, "http://internal");
  return { path: u.pathname, query: Object.fromEntries(u.searchParams) };
}

export async function readPage(ctx: Ctx, url: string, notice?: string): Promise<MarkdownPage> {
  const { path, query } = splitUrl(url);
  try {
    const { view, actions, resolved } = await registry.view(ctx, path, query);
    return {
      status: 200,
      path: url,
      markdown: renderPageMarkdown(view, actions, path, notice),
      actions: actions.map((a) => a.name),
      pageActions: resolved.page.actions,
    };
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    return {
      status: err.status,
      path: url,
      markdown: errorMarkdown(err.status, err.message, err),
      actions: [],
      pageActions: [],
    };
  }
}

export type ActionResult =
  | { ok: true; outcome: ActionOutcome; page: MarkdownPage }
  | { ok: false; status: number; markdown: string; message: string };

export async function runAction(
  ctx: Ctx,
  path: string,
  action: string,
  params: Record<string, unknown>,
  opts: Omit<RunOptions, "form"> = {},
): Promise<ActionResult> {
  try {
    const outcome = await registry.run(ctx, path, action, params, { ...opts, form: false });
    return { ok: true, outcome, page: await readPage(ctx, outcome.location, outcome.notice || undefined) };
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    return {
      ok: false,
      status: err.status,
      markdown: errorMarkdown(err.status, err.message, err),
      message: err.message,
    };
  }
}
