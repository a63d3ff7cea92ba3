import type { z } from "zod";
import type { Db, PrismaClient } from "../../db/prisma.ts";
import type {
  ApiToken,
  Commitment,
  Decision,
  Note,
  OutboundEndpoint,
  Studio,
  StudioRole,
  SubagentTaskRun,
  SubagentTaskRunStep,
  Tenant,
  TokenScope,
  User,
  UserKind,
} from "../../generated/prisma/client.ts";
import type { Issue } from "../../lib/errors.ts";
import type { LiveFeed } from "../live/feed.ts";

export interface Actor {
  id: string;
  tenantId: string;
  handle: string;
  name: string;
  kind: UserKind;
  parentId: string | null;
  /** Sees the tenant's usage and sets its prices; never a subagent. */
  tenantAdmin: boolean;
}

export function toActor(
  u: Pick<User, "id" | "tenantId" | "handle" | "name" | "kind" | "parentId" | "tenantAdmin">,
): Actor {
  return {
    id: u.id,
    tenantId: u.tenantId,
    handle: u.handle,
    name: u.name,
    kind: u.kind,
    parentId: u.parentId,
    tenantAdmin: u.kind === "person" && u.tenantAdmin,
  };
}

/**
 * Who can read a place (agents/policy/labels.ts): a studio's members, exactly these people,
 * an agent and whoever manages it, or the whole workspace. Pages say who can read what they
 * show; write actions say who can read where they write. `outside` is where a call to a
 * tool's server outside the workspace writes (anyone may read it): a write's audience only,
 * never in a label, since what comes back from there narrows nothing.
 */
export type Audience =
  | { studio: string }
  | { people: string[] }
  | { managersOf: string }
  | { workspace: true }
  | { outside: true };

/** Where an action writes: what it puts there, in words ("comment"), and who can read it there. */
export interface WriteAudience {
  what: string;
  to(ctx: Ctx, scope: Scope, params: Record<string, unknown>): Audience;
}

/**
 * What a subagent has taken in so far, as the audiences of everything it read: its label.
 * Every page it reads narrows it (the registry calls `read`); its holder (a run, an agent's
 * API token) keeps it where it survives a restart.
 */
export interface Flow {
  label(): Audience[];
  read(sources: Audience[]): Promise<void>;
}

/** Everything a page or action needs about the request, with no HTTP in it. */
export interface Ctx {
  db: PrismaClient;
  tenant: Tenant;
  actor: Actor;
  /** Set when a subagent acts inside a run: events and resources are attributed to it. */
  run?: {
    id: string;
    chainDepth: number;
    /** A replay under its original's rules: the policy it is judged by (agents/policy/policy.ts). */
    pinnedPolicy?: unknown;
    /** A dry run: its actions are judged, never executed (rehearsal.ts). */
    dry?: boolean;
  };
  /** `https://<tenant host>` as the request reached us, for addresses other systems call (webhooks); absent in process. */
  origin?: string;
  /** A subagent's label, narrowed by what it reads and checked by what it writes. */
  flow?: Flow;
  /**
   * The people a run acts within the view of (it was woken by someone who does not manage
   * its agent): a page any of them could not open answers the agent as it would answer them.
   */
  viewers?: Actor[];
  /** How an HTTP caller signed in: a token may do what its scope allows (token-scope.ts). Absent in process. */
  auth?: RequestAuth;
  /**
   * What the caller has read already for this request (a run's step), so the page does not
   * read it again. A field, not a side table keyed by the context: the registry hands pages
   * and guards spread copies of the context, and a copy carries the field.
   */
  primed?: Primed;
}

/** A subagent's row as the guard and policy need it (agents/policy/policy.ts). */
export type AgentRow = Pick<User, "id" | "parentId" | "ownerStudioId" | "agentConfig">;

export interface Primed {
  /** The acting agent's row as its last recorded call left it (never set when executing an action: that reads it afresh). */
  agent?: AgentRow;
  /** The run's claim's /whoami (agents/core/whoami-read.ts Whoami), for the run's first page. */
  whoami?: unknown;
}

/**
 * A person's session may do whatever the person may. A token is held to its scope; over MCP,
 * managing credentials needs the operator's leave besides (`manageOverMcp`, MCP_MANAGE_ACTIONS).
 */
export type RequestAuth =
  | {
      via: "session";
      /** Which one: "end my other sessions" keeps it. */
      sessionId?: string;
      /**
       * When its person last proved it was them (signing in, re-confirming): one object for
       * the request, so a re-confirmation in it is seen by the page that answers (step-up.ts).
       */
      confirmation?: { at: Date };
    }
  | { via: "token"; scope: TokenScope; mcp?: { manageOverMcp: boolean } };

/** What an action's transaction wrote, for the run's resource record. */
export interface Emitted {
  type: string;
  subjectType: string;
  subjectId: string;
}

/**
 * What the registry hands the pages and actions it runs: the caller's ctx and the registry's
 * own actions, so a page or action that needs another's definition (an approval parsing the
 * params it holds) asks the registry that runs it instead of importing the catalog above it.
 */
export interface PageCtx extends Ctx {
  actionDefs: ReadonlyMap<string, ActionDef>;
}

export interface ActionCtx extends PageCtx {
  tx: Db;
  emitted: Emitted[];
  /** The params came from a form (strings, unticked boxes left out): an action that parses another action's params parses them the same way. */
  form: boolean;
}

export type StudioScope = Studio & { role: StudioRole };

/** An agent as its pages load it: with its owning studio and the reader's role there (agents/core/ownership.ts). */
export type AgentScope = User & {
  ownerStudio: { id: string; handle: string; name: string; members: { role: StudioRole }[] } | null;
};

/** What a page resolved (and so authorized) for the actor; its actions act on it. */
export interface Scope {
  studio?: StudioScope;
  note?: Note;
  decision?: Decision;
  commitment?: Commitment;
  user?: User;
  /** A subagent the actor may see, loaded with what ownership.ts needs to say what they may do. */
  agent?: AgentScope;
  taskRun?: SubagentTaskRun;
  /** One step of `taskRun`. */
  step?: SubagentTaskRunStep;
  pendingId?: string;
  /** On a page that shows reviews in place (a thread, a run): the queued actions there this person may review. */
  reviewable?: string[];
  apiToken?: ApiToken;
  /** An outgoing webhook the actor keeps (services/reach/). */
  endpoint?: OutboundEndpoint;
  /** A mail's review link, as its path names it (services/reach/review-links.ts). */
  reviewToken?: string;
}

export type Query = Record<string, string | undefined>;

export interface Crumb {
  label: string;
  path?: string;
}

/** An inline form bound to one item (a "Dismiss" button beside a notification). */
export interface FormBlock {
  form: {
    action: string;
    fixed: Record<string, string>;
    label: string;
    /** Params shown as inputs (the rest are fixed or left out). */
    fields?: string[];
    /** Current values to prefill (your existing vote). */
    values?: Record<string, unknown>;
    /** `folded`: behind a toggle (a Reply link under each comment); `block`: a full form in the page, prefilled, instead of the side panel. */
    style?: "inline" | "folded" | "block";
    /** How deep in a thread it sits (a reply's Reply form): a browser indents it as deep. */
    depth?: number;
    /** Select options for params whose choices depend on the data (the keys you own). */
    choices?: Record<string, { value: string; label: string; group?: string }[]>;
    /** Params shown greyed out, each with why it cannot be chosen here. */
    disabled?: Record<string, string>;
    /** An object param filled in as the fields of this schema (a queued action's params, reviewed one field each). */
    nested?: Record<string, z.ZodObject>;
  };
}
/** Markdown; `html`, when given, is trusted server-rendered markup (a chart) shown instead in browsers. */
export type Block = { md: string; html?: string } | FormBlock;

export interface PageView {
  title: string;
  breadcrumb: Crumb[];
  blocks: Block[];
  /**
   * The page updates live (its `live` feed): where the view stands in that feed, so the
   * browser's stream starts right after what the page shows. Absent: nothing to watch now.
   */
  live?: { since: string };
  /**
   * The page's actions this view offers in its state (turning two-factor off only when it is
   * on), for its panel and its `## Actions`; absent: all it lists. Only what is shown: a
   * request for another still runs the action's own checks.
   */
  offers?: readonly string[];
  /**
   * Who can read what the page shows, when it is not simply its studio's members (a page
   * quoting several studios, or a note quoting a run's memory): each narrows a reader's label.
   * Absent: the page's studio, or nothing for pages about the reader itself.
   */
  sources?: Audience[];
}

/**
 * The `:name` segments of a path pattern, as a type: `"/studios/:studio/notes/:note"` gives
 * `"studio" | "note"`. A page's `resolve` and `view` read exactly the params its path has.
 */
export type PathParamNames<Pattern extends string> = Pattern extends `${string}:${infer Name}/${infer Rest}`
  ? Name | PathParamNames<`/${Rest}`>
  : Pattern extends `${string}:${infer Name}`
    ? Name
    : never;

/** A page's params by its pattern; any string pattern (the registry's view of every page) gives any params. */
export type PathParams<Pattern extends string> = string extends Pattern
  ? Record<string, string>
  : { [Name in PathParamNames<Pattern>]: string };

interface PageBase<Pattern extends string, Resolved extends Scope> {
  /** Path pattern: literal segments and `:param` segments. */
  pattern: Pattern;
  /** Actions that may appear on this page, in display order. */
  actions: string[];
  /** Authorizes and loads what the page is about; throws NotFoundError when the actor may not see it. */
  resolve(ctx: Ctx, params: PathParams<Pattern>): Promise<Resolved>;
  /** What changes on this page while it is open, as server-sent events (`Accept: text/event-stream`); after `resolve`. */
  live?(ctx: Ctx, scope: Resolved, query: Query): LiveFeed | Promise<LiveFeed>;
}

/** Renders what `resolve` authorized: most pages. */
interface RenderedPage<Pattern extends string, Resolved extends Scope> extends PageBase<Pattern, Resolved> {
  render(ctx: PageCtx, scope: Resolved, query: Query): Promise<PageView>;
  view?: undefined;
}

/**
 * Authorizes and reads its content in one statement, for pages on nearly every agent's
 * path, where a statement costs what its round trip costs. It must refuse exactly what
 * `resolve` refuses (both go through the same loader); actions still authorize with `resolve`.
 */
interface ReadPage<Pattern extends string, Resolved extends Scope> extends PageBase<Pattern, Resolved> {
  view(ctx: PageCtx, params: PathParams<Pattern>, query: Query): Promise<{ scope: Resolved; view: PageView }>;
  render?: undefined;
}

/** A page as the registry holds it: any pattern, any scope. Pages are written with `definePage` or `defineReadPage`. */
export type PageDef = RenderedPage<string, Scope> | ReadPage<string, Scope>;

/**
 * A page whose params are typed by its pattern and whose `render` gets the scope its
 * `resolve` returned, so neither asserts what the path already guarantees.
 */
export function definePage<const Pattern extends string, Resolved extends Scope>(
  def: RenderedPage<Pattern, Resolved>,
): PageDef {
  return def as unknown as PageDef;
}

/** `definePage` for a page that authorizes and reads in one statement (`ReadPage`). */
export function defineReadPage<const Pattern extends string, Resolved extends Scope>(
  def: ReadPage<Pattern, Resolved>,
): PageDef {
  return def as unknown as PageDef;
}

/** What the policy would have made of a dry run's action. */
export type DryDecision = "allowed" | "held" | "disclosure" | "refused";

export interface Rehearsed {
  decision: DryDecision;
  /** The rule that decided it, when one did (a rule's name, `requires_approval`, `disclosure`). */
  rule?: string;
  /** Why it would have been refused, in the words the run would have heard. */
  reason?: string;
}

export interface ActionOutcome {
  /** 202: not done yet — queued for the owner's approval. */
  status: 200 | 201 | 202;
  /** Where the result lives; the response renders that page. */
  location: string;
  notice: string;
  /** The notice says something did not work, though the action itself ran (a failed key test). */
  warning?: boolean;
  /** Shown exactly once (a new API token); never stored in a cookie or a log. */
  secret?: string;
  /** What the secret is ("Your new token" unless said). */
  secretLabel?: string;
  /** Markdown shown with the secret, that one time only (how to use it: it may quote the secret). */
  secretHelp?: string;
  /** Set when the action was queued for approval instead of executed; `rule`: what asked for review. */
  pending?: { id: string; waits: boolean; rule?: string };
  /** A dry run's action: what the policy would have made of it; nothing was executed (rehearsal.ts). */
  rehearsed?: Rehearsed;
  /** What a run's step keeps of it beside the notice (a tool call's id and server, for the run's trace). */
  recorded?: Record<string, string>;
  /**
   * What the action does once its transaction has committed, and the outcome it ends with: a
   * call to another service, which no rollback can take back. The transaction recorded that
   * it goes (its step, its claim, its audit event), so a retried job finds it done and never
   * makes it twice; the registry runs it once, after the commit (registry.ts `execute`).
   */
  afterCommit?: () => Promise<ActionOutcome>;
}

/**
 * What an action stands for when capabilities, rules and disclosure judge it by something
 * other than itself: a tool call, by the tool it calls (agents/policy/policy.ts).
 */
export interface Standing {
  /** The name capabilities and rules know it by (`<slug>__<tool>`). */
  name: string;
  /** The params rules match. */
  params: Record<string, unknown>;
  /** Refused whatever the rules say (not granted, changed since it was allowed), and why. */
  refused?: string;
  /** Who can read where it writes. */
  audience?: Audience;
  /** How a disclosure names it: "call to GitHub" and where that goes, "(outside the workspace)". */
  what?: string;
  where?: string;
  /** Waits for its reviewers whatever the rules say (a person's connection used in a run they did not wake), and why. */
  review?: string;
}

/** A field of a page's scope an action may need (`agent`, `studio`, `taskRun`…). */
export type ScopeField = keyof Scope;

/** A page's scope with the fields an action needs there: checked before the action sees it. */
export type ScopeWith<Needs extends ScopeField> = Scope & { [Field in Needs]-?: NonNullable<Scope[Field]> };

export interface ActionDef<S extends z.ZodObject = z.ZodObject, Needs extends ScopeField = never> {
  name: string;
  description: string;
  params: S;
  /**
   * The scope fields the action acts on (`["studio", "note"]`): its functions receive them
   * present, as every page it is listed on resolves them. A page without one is a mistake in
   * the code, not in the request: it fails with "page scope is missing …" before the action runs.
   */
  needs?: readonly Needs[];
  writes: boolean;
  /** Required when it writes: who can read what it writes (a registry test holds every write to it). */
  audience?: WriteAudience;
  /** Waits on another service: runs outside a transaction, so its writes must each stand alone. */
  callsOut?: boolean;
  /**
   * Checks the schema cannot make, because they read the database (a model in the workspace's
   * catalogue): given what was sent, whether or not the schema took it, so that every problem
   * of a request is answered in one round (registry.ts `validated`).
   */
  check?(ctx: Ctx, sent: Record<string, unknown>): Promise<Issue[]>;
  /**
   * Makes or ends a credential (an API token, a provider key): a token needs the `manage`
   * scope for it, and MCP offers it only when the operator allows (token-scope.ts).
   */
  manage?: true;
  /**
   * Changes what guards the workspace or its credentials (a token, a provider key, a signing
   * secret, an agent's capabilities and rules, workspace settings): a person on a session whose
   * last confirmation is older than STEP_UP_MINUTES confirms it is them, in the same form
   * (registry/step-up.ts). A token needs the `manage` scope for it, as for `manage`.
   */
  confirmRecent?: true;
  /** null when the actor may use it on this scope, else the reason they may not. */
  available?(ctx: Ctx, scope: ScopeWith<Needs>): string | null;
  /** What the policy judges instead of the action itself, once its params are known (`Standing`). */
  standsFor?(ctx: ActionCtx, params: z.infer<S>, scope: ScopeWith<Needs>): Promise<Standing>;
  /**
   * Cannot be undone (revoking a key, removing a member): what a person is about to lose, asked
   * before a browser form runs it (one more POST with `_confirm=yes`). Never asked of API,
   * markdown, MCP or agent callers: they name the action on purpose.
   */
  destructive?: string;
  /**
   * What exactly this call would do, for its confirmation ("Reject @scout's reply on “Retro
   * day”…"), when the sentence above cannot say it; shown before it.
   */
  confirmText?(ctx: Ctx, params: Record<string, unknown>, scope: ScopeWith<Needs>): Promise<string | null>;
  /** A browser form comes back to the page it was sent from (reviewing from a queue keeps the queue), not `location`. */
  staysOnPage?: boolean;
  /** The current values an edit form starts from (the note's text, the agent's model). */
  current?(scope: ScopeWith<Needs>): Record<string, unknown>;
  execute(ctx: ActionCtx, params: z.infer<S>, scope: ScopeWith<Needs>): Promise<ActionOutcome>;
}

/** The scope with the fields `needs` names, or the error of a page listing an action it cannot give it. */
function scopeWith<Needs extends ScopeField>(needs: readonly Needs[], scope: Scope): ScopeWith<Needs> {
  for (const field of needs)
    if (scope[field] === undefined) throw new Error(`page scope is missing ${field}`);
  return scope as ScopeWith<Needs>;
}

/**
 * An action as the registry holds it. Whatever calls one of its functions with a scope (the
 * registry running it, a page showing its form) goes through here, so the fields it `needs`
 * are checked in this one place before any of its own code reads them.
 */
export function defineAction<S extends z.ZodObject, const Needs extends ScopeField = never>(
  def: ActionDef<S, Needs>,
): ActionDef {
  const { needs, available, confirmText, current, execute, standsFor, ...described } = def;
  if (!needs?.length) return def as unknown as ActionDef;
  const checked: ActionDef<S> = {
    ...described,
    execute: (ctx, params, scope) => execute(ctx, params, scopeWith(needs, scope)),
    ...(available && { available: (ctx, scope) => available(ctx, scopeWith(needs, scope)) }),
    ...(confirmText && {
      confirmText: (ctx, params, scope) => confirmText(ctx, params, scopeWith(needs, scope)),
    }),
    ...(current && { current: (scope) => current(scopeWith(needs, scope)) }),
    ...(standsFor && {
      standsFor: (ctx, params, scope) => standsFor(ctx, params, scopeWith(needs, scope)),
    }),
  };
  return { ...checked, needs } as unknown as ActionDef;
}
