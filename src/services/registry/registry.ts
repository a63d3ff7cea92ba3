// The one registry of pages and actions. HTTP routes, the internal markdown API used
// by server-side agents, and (later) MCP all go through these functions.

import type { Db } from "../../db/prisma.ts";
import { AppError, ForbiddenError, NotFoundError, ValidationError } from "../../lib/errors.ts";
import { storable } from "../../lib/text.ts";
import type { LiveFeed } from "../live/feed.ts";
import { pageSources } from "./audiences.ts";
import { labelled, parseParams } from "./params.ts";
import { rehearse } from "./rehearsal.ts";
import { createRouter } from "./router.ts";
import { asksConfirmation, type StepUp } from "./step-up.ts";
import { scopeDenial } from "./token-scope.ts";
import type {
  ActionCtx,
  ActionDef,
  ActionOutcome,
  Ctx,
  Emitted,
  PageCtx,
  PageDef,
  PageView,
  Query,
  Scope,
} from "./types.ts";

export interface RunOptions {
  /** Form bodies are coerced from strings. */
  form: boolean;
  /** Runs inside the action's transaction after it executed (the run's step and resource rows). */
  inTx?: (tx: Db, outcome: ActionOutcome, emitted: Emitted[]) => Promise<void>;
  /** Runs first inside the transaction; throwing aborts the action (claiming an approval exactly once). */
  claim?: (tx: Db) => Promise<void>;
  /** An approved action: its review already happened, so the policy does not queue it again. */
  approved?: boolean;
  /** The agent's stated reason, kept with a queued action. */
  reason?: string;
  /** What a person on a session sent to re-confirm it is them (`_reconfirm`), for a `confirmRecent` action (step-up.ts). */
  reconfirm?: string;
}

/**
 * Decides at execution, when the params are known: null lets the action run; an outcome
 * replaces it (queued for approval); throwing refuses it (a deny rule).
 */
export type Policy = (
  ctx: ActionCtx,
  action: ActionDef,
  params: Record<string, unknown>,
  scope: Scope,
  path: string,
  opts: RunOptions,
) => Promise<ActionOutcome | null>;

export interface Resolved {
  page: PageDef;
  params: Record<string, string>;
  scope: Scope;
}

export type Registry = ReturnType<typeof createRegistry>;

/**
 * A check every action passes after its own `available`: for subagents, capabilities and
 * "never more than its owner could do". Returns the reason to refuse, or null.
 */
export type Guard = (ctx: Ctx, action: ActionDef, scope: Scope) => Promise<string | null>;

/**
 * A page's query is navigation, not input to keep: characters Postgres cannot take (NUL,
 * a lone surrogate) are dropped, so `/search?q=%00` finds nothing instead of failing.
 */
function storableQuery(query: Query): Query {
  return Object.fromEntries(
    Object.entries(query).map(([key, value]) => [key, value === undefined ? value : storable(value)]),
  );
}

/**
 * The params, or every problem with them at once: the schema's and the action's own checks
 * (which read the database) both run before the first answer, so a person fixes a form once.
 */
async function validated(ctx: Ctx, action: ActionDef, body: Record<string, unknown>, opts: RunOptions) {
  let params: Record<string, unknown> | undefined;
  let refused: ValidationError | undefined;
  try {
    params = parseParams(action.params, body, opts);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    refused = err;
  }
  const more = (await action.check?.(ctx, body)) ?? [];
  const named = new Set(refused?.issues.map((issue) => issue.field));
  const issues = [...(refused?.issues ?? []), ...more.filter((issue) => !named.has(issue.field))];
  if (issues.length) throw labelled(action.params, new ValidationError(issues));
  return params!;
}

export function createRegistry(
  pages: PageDef[],
  actions: ActionDef[],
  hooks: { guard?: Guard; policy?: Policy; stepUp?: StepUp } = {},
) {
  const { guard, policy, stepUp } = hooks;
  const match = createRouter(pages);
  const byName = new Map<string, ActionDef>();
  for (const action of actions) {
    if (byName.has(action.name)) throw new Error(`action ${action.name} defined twice`);
    byName.set(action.name, action);
  }
  for (const pageDef of pages)
    for (const name of pageDef.actions)
      if (!byName.has(name)) throw new Error(`page ${pageDef.pattern} lists unknown action ${name}`);

  const handed = (ctx: Ctx): PageCtx => ({ ...ctx, actionDefs: byName });

  function page(path: string) {
    const matched = match(path);
    if (!matched) throw new NotFoundError(`No page at ${path}`);
    return matched;
  }

  /**
   * A run woken by someone who does not manage its agent reads only what they could: the
   * page must resolve for each of them too, and answers the agent as it would answer them.
   */
  async function withinViewers(ctx: Ctx, matched: ReturnType<typeof page>) {
    for (const actor of ctx.viewers ?? [])
      await matched.page.resolve({ db: ctx.db, tenant: ctx.tenant, actor }, matched.params);
  }

  async function resolve(ctx: Ctx, path: string): Promise<Resolved> {
    const matched = page(path);
    await withinViewers(ctx, matched);
    return { ...matched, scope: await matched.page.resolve(ctx, matched.params) };
  }

  async function denial(ctx: Ctx, action: ActionDef, scope: Scope): Promise<string | null> {
    // The token's scope first: it holds whoever the token's user is. Then the guard: an agent
    // refused a capability hears that, not an incidental check.
    return (
      scopeDenial(ctx, action) ??
      (guard ? await guard(ctx, action, scope) : null) ??
      action.available?.(ctx, scope) ??
      null
    );
  }

  /** The actions the actor can use on this page: the same list a page shows and execution enforces. */
  async function available(ctx: Ctx, resolved: Resolved): Promise<ActionDef[]> {
    const defs = resolved.page.actions.map((n) => byName.get(n)!);
    const reasons = await Promise.all(defs.map((a) => denial(ctx, a, resolved.scope)));
    return defs.filter((_, i) => reasons[i] === null);
  }

  /** The action if the actor may use it here; 404 if the page has no such action, 403 with the reason otherwise. */
  async function usable(ctx: Ctx, resolved: Resolved, name: string, path: string): Promise<ActionDef> {
    const action = resolved.page.actions.includes(name) ? byName.get(name) : undefined;
    if (!action) {
      const names = (await available(ctx, resolved)).map((x) => `\`${x.name}\``);
      throw new NotFoundError(
        `No action \`${name}\` on ${path}. ${names.length ? `Actions here: ${names.join(", ")}.` : "This page has no actions you can use."}`,
      );
    }
    const reason = await denial(ctx, action, resolved.scope);
    if (reason) throw new ForbiddenError(`You cannot use \`${name}\` here: ${reason}`);
    return action;
  }

  return {
    actions: byName,
    pages,
    resolve,
    available,

    /** Whether `action` asks this actor to re-confirm first: its forms show the field (step-up.ts). */
    asksConfirmation(ctx: Ctx, action: ActionDef): boolean {
      return asksConfirmation(stepUp, ctx, action);
    },

    /** The page whose pattern `path` matches, without loading or authorizing anything; null if none. */
    pageAt(path: string): PageDef | null {
      return match(path)?.page ?? null;
    },

    async view(
      caller: Ctx,
      path: string,
      raw: Query,
    ): Promise<{ view: PageView; actions: ActionDef[]; resolved: Resolved }> {
      const ctx = handed(caller);
      const matched = page(path);
      const query = storableQuery(raw);
      await withinViewers(ctx, matched);
      let read: { view: PageView; actions: ActionDef[]; resolved: Resolved };
      if (matched.page.view) {
        const got = await matched.page.view(ctx, matched.params, query);
        const resolved = { ...matched, scope: got.scope };
        read = { view: got.view, actions: await available(ctx, resolved), resolved };
      } else {
        const resolved = { ...matched, scope: await matched.page.resolve(ctx, matched.params) };
        // Independent reads: the page's content and which actions the actor may use.
        const [view, actions] = await Promise.all([
          matched.page.render(ctx, resolved.scope, query),
          available(ctx, resolved),
        ]);
        read = { view, actions, resolved };
      }
      // Whatever the reader took in narrows its label, before it can act on it.
      await ctx.flow?.read(pageSources(ctx, read.resolved.scope, read.view));
      return read;
    },

    /**
     * A page's live feed, authorized as the page itself is (its `resolve`): whoever may not
     * see the page gets its 404, not its stream. 406 for a page with nothing live.
     */
    async live(ctx: Ctx, path: string, raw: Query): Promise<LiveFeed> {
      const matched = page(path);
      await withinViewers(ctx, matched);
      const scope = await matched.page.resolve(ctx, matched.params);
      if (!matched.page.live)
        throw new AppError(406, `${path} has no live updates: ask for it as text/html or text/markdown.`);
      return matched.page.live(ctx, scope, storableQuery(raw));
    },

    async describe(ctx: Ctx, path: string, name: string): Promise<{ action: ActionDef; resolved: Resolved }> {
      const resolved = await resolve(ctx, path);
      return { action: await usable(ctx, resolved, name, path), resolved };
    },

    /** The view of a page already resolved (an action's page, for its title and breadcrumb). */
    async render(caller: Ctx, resolved: Resolved, query: Query): Promise<PageView> {
      const ctx = handed(caller);
      const view = resolved.page.view
        ? (await resolved.page.view(ctx, resolved.params, query)).view
        : await resolved.page.render(ctx, resolved.scope, query);
      await ctx.flow?.read(pageSources(ctx, resolved.scope, view));
      return view;
    },

    /** Validates, then executes in one transaction: the write, its event and audit rows commit together or not at all. */
    async run(
      ctx: Ctx,
      path: string,
      name: string,
      body: Record<string, unknown>,
      opts: RunOptions,
    ): Promise<ActionOutcome> {
      const resolved = await resolve(ctx, path);
      const action = await usable(ctx, resolved, name, path);
      // Must come after `usable` (who may not use the action hears that, not "confirm it is
      // you") and before anything runs. The one place a session is asked to re-confirm.
      if (stepUp && asksConfirmation(stepUp, ctx, action)) await stepUp.confirm(ctx, opts.reconfirm);
      try {
        return await execute(ctx, path, resolved, action, body, opts);
      } catch (err) {
        // An action's own check names a field by its param; the person reads its label.
        throw err instanceof ValidationError ? labelled(action.params, err) : err;
      }
    },
  };

  /** Validates, then executes in one transaction: the write, its event and audit rows commit together or not at all. */
  async function execute(
    ctx: Ctx,
    path: string,
    resolved: Resolved,
    action: ActionDef,
    body: Record<string, unknown>,
    opts: RunOptions,
  ): Promise<ActionOutcome> {
    const params = await validated(ctx, action, body, opts);
    if (ctx.run?.dry) {
      const judge = (tx: Db) => {
        const actx: ActionCtx = { ...ctx, actionDefs: byName, tx, emitted: [], form: opts.form };
        return policy ? policy(actx, action, params, resolved.scope, path, opts) : Promise.resolve(null);
      };
      return rehearse(ctx, path, action, judge, opts.inTx && ((tx, outcome) => opts.inTx!(tx, outcome, [])));
    }
    if (action.callsOut) {
      // A call to another service (testing a provider key) must not hold a transaction open.
      const actx: ActionCtx = { ...ctx, actionDefs: byName, tx: ctx.db, emitted: [], form: opts.form };
      const held = opts.approved ? null : await policy?.(actx, action, params, resolved.scope, path, opts);
      return held ?? (await action.execute(actx, params, resolved.scope));
    }
    const done = await ctx.db.$transaction(async (tx) => {
      const actx: ActionCtx = { ...ctx, actionDefs: byName, tx, emitted: [], form: opts.form };
      await opts.claim?.(tx);
      try {
        const held = opts.approved ? null : await policy?.(actx, action, params, resolved.scope, path, opts);
        const outcome = held ?? (await action.execute(actx, params, resolved.scope));
        await opts.inTx?.(tx, outcome, actx.emitted);
        return outcome;
      } catch (err) {
        // Returned, not thrown, so the transaction commits what the refusal recorded.
        if (err instanceof AppError && err.commits) return err;
        throw err;
      }
    });
    if (done instanceof AppError) throw done;
    // After the commit, never inside it: what it records is what makes it happen at most once.
    return done.afterCommit ? await done.afterCommit() : done;
  }
}
