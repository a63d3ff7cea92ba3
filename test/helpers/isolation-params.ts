// From the registry to concrete requests for the isolation sweep: a URL for every page
// pattern (PARAMS), whether it names something B has too, and a valid body for every action
// (FIELDS), each taken from a seed.
import { newId } from "../../src/lib/ids.ts";
import { eventFlag } from "../../src/services/actions/outgoing-webhooks.ts";
import { SUBSCRIPTION_EVENTS } from "../../src/services/agents/automations/subscriptions.ts";
import { DEFAULT_CAPABILITIES } from "../../src/services/agents/core/settings.ts";
import { GRANTABLE } from "../../src/services/agents/policy/capabilities.ts";
import { HOOK_EVENTS } from "../../src/services/reach/news.ts";
import { REACH_KINDS } from "../../src/services/reach/preferences.ts";
import { fields } from "../../src/services/registry/params.ts";
import type { ActionDef, PageDef } from "../../src/services/registry/types.ts";
import { PASSWORD, testPrisma, type World } from "./app.ts";
import { SEEDED_TOOL } from "./isolation-seed-tools.ts";
import type { Seed, Victim } from "./isolation-seeds.ts";

/**
 * How each `:param` of a page pattern is filled from a seed, keyed by the pattern's
 * first segment and the param (`/u/:handle` is a person, `/subagents/:handle` an agent).
 * A pattern with a param not listed here fails the suite: a new page must be taught
 * to the isolation test. `object` params name rows B never has; handles may exist in
 * B under the same name (B has studio `general`, user `alice`, subagent `scout`).
 */
type ParamKind = "object" | "studio" | "user" | "agent" | "version";
const PARAMS: Record<string, { kind: ParamKind; value: (s: Seed) => string }> = {
  "studios.studio": { kind: "studio", value: (s) => s.studio.handle },
  "studios.note": { kind: "object", value: (s) => s.note },
  "studios.decision": { kind: "object", value: (s) => s.decision },
  "studios.commitment": { kind: "object", value: (s) => s.commitment },
  "u.handle": { kind: "user", value: (s) => s.actor.handle },
  // A person's page for admins: the member the member actions target (deactivated, then back).
  "settings.handle": { kind: "user", value: (s) => (s.owner === "B" ? s.other.handle : s.memberTarget) },
  "u.token": { kind: "object", value: (s) => s.pageToken ?? s.token.id },
  "subagents.handle": { kind: "agent", value: (s) => s.agent },
  "subagents.run": { kind: "object", value: (s) => s.run },
  // A step's page is a finished run's step 2, which replay_run can re-run from.
  "subagents.step": { kind: "object", value: () => "2" },
  "subagents.pending": { kind: "object", value: (s) => s.pending },
  "subagents.case": { kind: "object", value: (s) => s.pageTestCase ?? s.testCase },
  "subagents.experiment": { kind: "object", value: (s) => s.pageExperiment ?? s.experiment },
  // Every agent made through create_subagent has its version 1 (B's scout too): the path is
  // B's own page wherever the agent's handle is B's.
  "subagents.version": { kind: "version", value: () => "1" },
  "u.id": { kind: "object", value: (s) => s.pageEndpoint ?? s.endpoint ?? NO_HOOK },
  "review.token": { kind: "object", value: (s) => s.pageLink ?? s.links?.approve ?? NO_LINK },
  "u.connection": { kind: "object", value: (s) => s.pageConnection ?? s.connection ?? NO_CONNECTION },
  "studios.connection": {
    kind: "object",
    value: (s) => s.pageStudioConnection ?? s.studioConnection ?? NO_CONNECTION,
  },
};

/** Where one page names something other than its first segment's usual row. */
const PATTERN_PARAMS: Record<string, typeof PARAMS> = {
  "/subagents/:handle/runs/:run/steps/:step": {
    "subagents.run": { kind: "object", value: (s) => s.finished },
  },
};

function param(pattern: string, name: string) {
  const key = `${pattern.split("/")[1]}.${name}`;
  const p = PATTERN_PARAMS[pattern]?.[key] ?? PARAMS[key];
  if (!p)
    throw new Error(
      `tenant-isolation: no value for :${name} in page ${pattern}; add "${key}" to PARAMS in test/helpers/isolation-params.ts`,
    );
  return p;
}

export function paramNames(pattern: string): string[] {
  return pattern
    .split("/")
    .filter((seg) => seg.startsWith(":"))
    .map((seg) => seg.slice(1));
}

export function concreteUrl(pattern: string, seed: Seed): string {
  return pattern.replace(/:([A-Za-z_]+)/g, (_m, name: string) => param(pattern, name).value(seed));
}

export function actionUrl(pageUrl: string, action: string): string {
  return `${pageUrl === "/" ? "" : pageUrl}/actions/${action}`;
}

/** Whether a page URL of A names only things B has too (same studio and user handles). */
export interface InB {
  studios: Set<string>;
  users: Set<string>;
  agents: Set<string>;
}

/** The studios, people and agents B has, by handle: which of A's paths exist in B too. */
export async function handlesOf(B: World): Promise<InB> {
  const db = testPrisma();
  const users = async (kind: "person" | "subagent") =>
    new Set((await db.user.findMany({ where: { tenantId: B.tenant.id, kind } })).map((u) => u.handle));
  return {
    studios: new Set((await db.studio.findMany({ where: { tenantId: B.tenant.id } })).map((s) => s.handle)),
    users: await users("person"),
    agents: await users("subagent"),
  };
}

export function existsInB(pattern: string, seed: Seed, b: InB): boolean {
  if (seed.owner === "B") return true;
  const has: Record<ParamKind, Set<string>> = {
    studio: b.studios,
    user: b.users,
    agent: b.agents,
    object: new Set(),
    version: new Set(["1"]),
  };
  return paramNames(pattern).every((name) => {
    const p = param(pattern, name);
    return has[p.kind].has(p.value(seed));
  });
}

interface Probe {
  value: string | number | boolean | Record<string, string>;
  /** The value names one of A's objects: B must never get a success with it. */
  aRef?: boolean;
}

const PROBE = `probe${newId(6)}`;
/** A well-formed key id no key has. */
const NO_KEY = `nokey${newId(7)}`;
const NO_HOOK = `nohook${newId(7)}`;
const NO_LINK = `nolink${newId(20)}`;
const NO_TOOL = "nobody__has_this_tool";
const NO_CONNECTION = `noconn${newId(7)}`;
/** The connection a connection page's actions name: the studio's on a studio's page, else the actor's. */
const connectionOn = (s: Seed, page: PageDef): Probe => ({
  value: (page.pattern.startsWith("/studios") ? s.studioConnection : s.connection) ?? NO_CONNECTION,
  aRef: true,
});
const slug = (s: Seed) =>
  s.label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .slice(0, 8);

/**
 * A plausible, valid value for each action param, taken from A's seed. Action-specific
 * entries (`action.param`) win over generic ones (`param`). An unknown param name fails
 * the suite, so a new action or param is never silently skipped.
 */
/** The keys a keys page manages: the studio's on a studio's page, else the person's. */
const keysOn = (s: Seed, page: PageDef) => (page.pattern.startsWith("/studios") ? s.studioKeys : s.keys);

/** A model the seed's workspace's catalogue has (A's own priced model), or B's smuggling A's. */
const catalogueModel = (s: Seed): Probe =>
  s.catalogueModel ? { value: s.catalogueModel.name, aRef: s.catalogueModel.aRef } : { value: "gpt-4o-mini" };

const FIELDS: Record<string, (s: Seed, page: PageDef, v: Pick<Victim, "findme">) => Probe> = {
  text: () => ({ value: `${PROBE} text` }),
  title: (s) => ({ value: `${PROBE} title ${s.label}` }),
  question: () => ({ value: `${PROBE} question?` }),
  description: () => ({ value: `${PROBE} description` }),
  options: () => ({ value: `${PROBE} yes\n${PROBE} no` }),
  critical_mass: () => ({ value: 1 }),
  name: () => ({ value: `${PROBE} name` }),
  bio: () => ({ value: `${PROBE} bio` }),
  accept: () => ({ value: true }),
  prefer: () => ({ value: true }),
  // Clearing the memory on a transfer: the probe asks for it, so a refused transfer clears nothing either.
  clear_memory: () => ({ value: true }),
  // A dry run from another tenant is refused as a live one is.
  "run_task.dry": () => ({ value: true }),
  role: () => ({ value: "admin" }),
  "create_api_token.scope": () => ({ value: "manage" }),
  expires_in_days: () => ({ value: 30 }),
  query: (_s, _p, v) => ({ value: v.findme }),
  invite_code: (s) => ({ value: s.joinCode, aRef: true }),
  option_id: (s) => ({ value: s.option, aRef: true }),
  reply_to: (s, page) => {
    const subject = (["note", "decision", "commitment"] as const).find((k) =>
      paramNames(page.pattern).includes(k),
    );
    if (!subject)
      throw new Error(`tenant-isolation: reply_to on ${page.pattern}, which has no comment subject`);
    return { value: s.comments[subject], aRef: true };
  },
  identity_prompt: () => ({ value: `${PROBE} identity` }),
  model: catalogueModel,
  fallback_models: catalogueModel,
  "set_agent_limits.default_model": catalogueModel,
  // Switching agents off would stop the other probes' runs: the probe switches them on.
  "set_agents_enabled.agents": () => ({ value: "on" }),
  trigger_rate_per_minute: () => ({ value: 3 }),
  workspace_trigger_rate_per_minute: () => ({ value: 0 }),
  chain_depth_limit: () => ({ value: 3 }),
  // What new agents may do: what they may do by default, so the probes' new agents are as before.
  ...Object.fromEntries(
    GRANTABLE.map((g) => [
      `set_default_capabilities.${g}`,
      () => ({ value: (DEFAULT_CAPABILITIES as readonly string[]).includes(g) }),
    ]),
  ),
  max_steps: () => ({ value: 3 }),
  timeout_seconds: () => ({ value: 60 }),
  task: () => ({ value: `${PROBE} task` }),
  answer: () => ({ value: `${PROBE} answer` }),
  reason: () => ({ value: `${PROBE} reason` }),
  "create_studio.handle": (s) => ({ value: `${PROBE}-${slug(s)}` }),
  "create_subagent.handle": (s, page) => ({
    value: `${PROBE}-agent-${slug(s)}${page.pattern.startsWith("/studios") ? "-s" : ""}`,
  }),
  "add_to_studio.studio": (s) => ({ value: s.agentStudio.handle, aRef: s.agentStudio.aRef }),
  "remove_from_studio.studio": (s) => ({ value: s.agentStudio.handle, aRef: s.agentStudio.aRef }),
  // The actor's watcher is in the seed's studio; its handle exists only in A.
  "subscribe.agent": (s) => ({ value: s.watcher, aRef: true }),
  "unsubscribe.agent": (s) => ({ value: s.watcher, aRef: true }),
  subscription: (s) => ({ value: s.subscription, aRef: true }),
  subscription_window_seconds: () => ({ value: 30 }),
  // Which events a subscription wakes for: all of them.
  ...Object.fromEntries(SUBSCRIPTION_EVENTS.map((k) => [k, () => ({ value: true })])),
  "update_member_role.handle": (s) => ({ value: s.memberTarget, aRef: true }),
  "remove_member.handle": (s) => ({ value: s.memberTarget, aRef: true }),
  "dismiss.id": (s) => ({ value: s.notification, aRef: true }),
  "end_session.id": (s) => ({ value: s.session, aRef: true }),
  // rename_passkey then remove_passkey on the security page: the passkey the probe renames is the one it removes.
  "rename_passkey.id": (s) => ({ value: s.passkey ?? NO_KEY, aRef: true }),
  "remove_passkey.id": (s) => ({ value: s.passkey ?? NO_KEY, aRef: true }),
  // The new password is the old one: every probe after it still signs in with it.
  current_password: () => ({ value: PASSWORD }),
  new_password: () => ({ value: PASSWORD }),
  agents_to: (s) => ({ value: s.studio.handle }),
  // A's own hostname: B can neither claim it (taken) nor remove it (not B's). A seed without one
  // names a hostname nobody holds.
  hostname: (s) => ({ value: s.hostname ?? "nobody-holds-this.example.test", aRef: Boolean(s.hostname) }),
  "approve_action.id": (s, page) => ({ value: pendingFor(s, page, "approve_action"), aRef: true }),
  "reject_action.id": (s, page) => ({ value: pendingFor(s, page, "reject_action"), aRef: true }),
  // The queued action's params, a field each (a form sends them as params.title, params.text).
  "approve_action.params": () => ({
    value: { title: `${PROBE} approved`, text: `${PROBE} approved text` },
  }),
  "set_capabilities.approval_mode": () => ({ value: "continue" }),
  "set_capabilities.approval_expiry_hours": () => ({ value: 24 }),
  // add_rule then remove_rule on the same page: the rule the probe adds is the one it removes.
  "add_rule.name": () => ({ value: `${PROBE} rule` }),
  "add_rule.action": () => ({ value: "search" }),
  "add_rule.decision": () => ({ value: "allow" }),
  "add_rule.param_patterns": () => ({ value: `query=^${PROBE}` }),
  "add_rule.position": () => ({ value: 1 }),
  // try_rule saves nothing: the same rule, tried.
  "try_rule.action": () => ({ value: "search" }),
  "try_rule.decision": () => ({ value: "allow" }),
  "try_rule.param_patterns": () => ({ value: `query=^${PROBE}` }),
  "try_rule.position": () => ({ value: 1 }),
  "remove_rule.name": () => ({ value: `${PROBE} rule` }),
  // Version 1, which every agent has (B's own on B's pages): a restore of it is a version of the page's own agent.
  "restore_agent_version.version": () => ({ value: 1 }),
  // Test cases: the case page edits then deletes its own case; the cases list deletes the spare.
  ...Object.fromEntries(
    ["save_test_case", "update_test_case_expectations"].flatMap((action) => [
      [`${action}.must_take`, () => ({ value: `search query=^${PROBE}` })],
      [`${action}.must_not_take`, () => ({ value: "create_note" })],
      [`${action}.must_finish`, () => ({ value: true })],
      [`${action}.max_steps`, () => ({ value: 5 })],
      [`${action}.max_cost_usd`, () => ({ value: 0.5 })],
      [`${action}.no_disclosure`, () => ({ value: true })],
      [`${action}.reply_contains`, () => ({ value: `${PROBE} done` })],
      [`${action}.reply_lacks`, () => ({ value: `${PROBE} sorry` })],
      [`${action}.rubric`, () => ({ value: `${PROBE}: a polite review` })],
      // A model every workspace's catalogue has (the price list's).
      [`${action}.rubric_model`, () => ({ value: "gpt-4o-mini" })],
      [`${action}.rubric_pass_at`, () => ({ value: 7 })],
    ]),
  ),
  // An experiment of the page's own agent, trying an edited prompt (its runs stay queued here).
  "start_experiment.try": () => ({ value: "prompt" }),
  "start_experiment.identity_prompt": () => ({ value: `${PROBE} candidate` }),
  // The prompt is the candidate: the model a prompt candidate ignores names nobody's.
  "start_experiment.model": () => ({ value: "" }),
  "start_experiment.version": () => ({ value: 1 }),
  "start_experiment.cost_cap_usd": () => ({ value: 0.01 }),
  "start_experiment.parallel": () => ({ value: 1 }),
  "update_test_case_expectations.case": (s) => ({ value: s.testCase, aRef: true }),
  "delete_test_case.case": (s, page) => ({
    value: page.pattern.endsWith(":case") ? s.testCase : s.spareTestCase,
    aRef: true,
  }),
  // Connected tools: the seed's own (isolation-seed-tool-calls.ts), which only A's agent can be granted;
  // people never call one (tool-runs*.test.ts call real ones in runs).
  "set_tool_level.tool": (s) => ({ value: s.tool ?? NO_TOOL, aRef: Boolean(s.tool) }),
  "set_tool_level.level": () => ({ value: "on" }),
  "call_tool.tool": (s) => ({ value: s.tool ?? NO_TOOL, aRef: Boolean(s.tool) }),
  "call_tool.arguments": () => ({ value: { query: PROBE } }),
  // add_schedule adds one of its own; the others act on the seeded schedule, remove_schedule last.
  cron: () => ({ value: "0 9 * * *" }),
  time_zone: () => ({ value: "Europe/Paris" }),
  schedule: (s) => ({ value: s.schedule ?? NO_KEY, aRef: true }),
  // One level per grantable action: grant them all, ask approval for none.
  ...Object.fromEntries(GRANTABLE.map((g) => [`set_capabilities.${g}`, () => ({ value: "on" })])),
  // Keeping an action for people would change what the other probes' agents may do.
  ...Object.fromEntries(GRANTABLE.map((g) => [`set_human_only.${g}`, () => ({ value: false })])),
  "revoke_api_token.id": (s) => ({ value: s.token.id, aRef: true }),
  // Provider keys: a new one points at a closed local port, like the seeded ones.
  "add_api_key.label": () => ({ value: `${PROBE} key` }),
  "add_api_key.provider": () => ({ value: "openai_compatible" }),
  "add_api_key.base_url": () => ({ value: "http://127.0.0.1:9/v1" }),
  "add_api_key.key": () => ({ value: `sk-${PROBE}-probe-key` }),
  "test_api_key.key_id": (s, page) => ({ value: keysOn(s, page)?.use ?? NO_KEY, aRef: true }),
  "revoke_api_key.key_id": (s, page) => ({ value: keysOn(s, page)?.revoke ?? NO_KEY, aRef: true }),
  "set_agent_api_key.api_key": (s) => ({ value: s.agentKey ?? s.keys?.use ?? NO_KEY, aRef: true }),
  // Studio agents: created on the studio's page or /subagents for the seed's studio.
  "create_subagent.studio": (s) => ({ value: s.agentStudio.handle, aRef: s.agentStudio.aRef }),
  "transfer_subagent.studio": (s) => ({ value: s.agentStudio.handle, aRef: s.agentStudio.aRef }),
  "set_member_runs.members_may_run": () => ({ value: true }),
  // Webhooks: the seed's own, through rotate, disable, enable and (last on the page) delete.
  instruction: () => ({ value: `${PROBE} instruction` }),
  webhook_id: (s) => ({ value: s.webhook ?? NO_HOOK, aRef: true }),
  signature: () => ({ value: "cadre" }),
  old_secret: () => ({ value: "grace" }),
  // Invitations: B's probes invite addresses of nobody's and name a studio by handle (A's own
  // only in the A-only seed); the invitation they withdraw is A's.
  emails: () => ({ value: `${PROBE}@example.test` }),
  studios: (s) => ({ value: s.studio.handle }),
  invitation: (s) => ({ value: s.invitation ?? NO_KEY, aRef: true }),
  link: () => ({ value: "on" }),
  allowed_domains: () => ({ value: "example.test" }),
  // An issuer nobody answers at: saving is refused (400, discovery failed) before it writes, for
  // A as for B; test/sso.test.ts saves one against a real OpenID Provider.
  "set_sso_provider.display_name": () => ({ value: `${PROBE} SSO` }),
  "set_sso_provider.issuer": () => ({ value: "http://127.0.0.1:9/" }),
  "set_sso_provider.client_id": () => ({ value: "probe-client" }),
  "set_sso_provider.client_secret": () => ({ value: `${PROBE}-client-secret` }),
  "set_sso_provider.sso_only": () => ({ value: false }),
  // A code no authenticator shows: the probe's confirm is refused (400) for A as for B.
  "confirm_two_factor.code": () => ({ value: "000000" }),
  "set_two_factor_policy.policy": () => ({ value: "off" }),
  "set_cost_limit.monthly_limit_usd": () => ({ value: 50 }),
  "set_cost_limit.alert_thresholds_usd": () => ({ value: "1, 5" }),
  // set_model_price then remove_model_price on the same page: the price the probe sets is the one it removes.
  "set_model_price.model": () => ({ value: `${PROBE}-price` }),
  "set_model_price.input": () => ({ value: 1 }),
  "set_model_price.cached_input": () => ({ value: 0.5 }),
  "set_model_price.cache_write_input": () => ({ value: 1.25 }),
  // The seed's run is written directly, without the rules a queued run keeps: re-run under the current ones.
  "replay_run.rules": () => ({ value: "current" }),
  "set_model_price.output": () => ({ value: 2 }),
  "remove_model_price.model": () => ({ value: `${PROBE}-price` }),
  // Approving as asked: the always-allow probe would add a rule other probes' agents obey.
  "approve_action.always_allow": () => ({ value: false }),
  "approve_action.allow_when": () => ({ value: `title=^${PROBE}` }),
  "approve_action.allow_any": () => ({ value: false }),
  "approve_from_link.token": (s) => ({ value: s.links?.approve ?? NO_LINK, aRef: true }),
  "reject_from_link.token": (s) => ({ value: s.links?.reject ?? NO_LINK, aRef: true }),
  ...Object.fromEntries(REACH_KINDS.map((k) => [`set_notifications.${k}`, () => ({ value: "email" })])),
  // Every agent, not a handle: B has a `scout` of its own, which it may mute.
  "mute_agent_mentions.agent": () => ({ value: "all" }),
  "unmute_agent_mentions.agent": () => ({ value: "all" }),
  "create_outgoing_webhook.url": () => ({ value: "http://127.0.0.1:9/hook" }),
  "create_outgoing_webhook.format": () => ({ value: "json" }),
  "create_outgoing_webhook.studio": (s) => ({ value: s.agentStudio.handle, aRef: s.agentStudio.aRef }),
  ...Object.fromEntries(
    HOOK_EVENTS.map((e) => [`create_outgoing_webhook.${eventFlag(e)}`, () => ({ value: true })]),
  ),
  "add_tool_connection.name": () => ({ value: `${PROBE} tools` }),
  "add_tool_connection.slug": () => ({ value: PROBE.toLowerCase().slice(0, 24) }),
  "add_tool_connection.url": () => ({ value: "http://127.0.0.1:9/mcp" }),
  // The one audience both a person's and a studio's connection may declare.
  "add_tool_connection.audience": () => ({ value: "outside" }),
  "add_tool_connection.auth": () => ({ value: "none" }),
  "add_tool_connection.token": () => ({ value: "" }),
  "test_tool_connection.id": (s, page) => connectionOn(s, page),
  "disconnect_tool_connection.id": (s, page) => connectionOn(s, page),
  "sign_in_tool_connection.id": (s, page) => connectionOn(s, page),
  "accept_tool_change.id": (s, page) => connectionOn(s, page),
  "accept_tool_change.tool": () => ({ value: SEEDED_TOOL }),
  // Empty: any public host, so the sweep's own connections are not refused after it.
  "set_tool_hosts.hosts": () => ({ value: "" }),
  ...Object.fromEntries(
    ["confirm", "test", "enable", "disable", "delete"].map((a) => [
      `${a}_outgoing_webhook.id`,
      (s: Seed) => ({ value: s.endpoint ?? NO_HOOK, aRef: true }),
    ]),
  ),
};

/** The pending action a review action on this page names: its own one, so each can succeed once. */
function pendingFor(s: Seed, page: PageDef, action: string): string {
  const id = s.pendings[`${page.pattern} ${action}`];
  if (!id)
    throw new Error(
      `tenant-isolation: no pending action seeded for ${action} on ${page.pattern} (reviewKeys)`,
    );
  return id;
}

export interface Body {
  json: Record<string, string | number | boolean | Record<string, string>>;
  form: Record<string, string>;
  aRef: boolean;
}

/** Also used by test/capabilities.test.ts, with a seed of its own world (`v` only gives the word to search for). */
export function probeBody(action: ActionDef, page: PageDef, seed: Seed, v: Pick<Victim, "findme">): Body {
  const body: Body = { json: {}, form: {}, aRef: false };
  for (const f of fields(action.params)) {
    // A probe may still be keyed by the param's former name (`webhook_id`, now `id`).
    const names = [f.name, ...(f.formerly ? [f.formerly] : [])];
    const make = names.map((name) => FIELDS[`${action.name}.${name}`] ?? FIELDS[name]).find(Boolean);
    if (!make)
      throw new Error(
        `tenant-isolation: no probe value for param \`${f.name}\` of action \`${action.name}\`; add it to FIELDS in test/helpers/isolation-params.ts`,
      );
    const p = make(seed, page, v);
    body.json[f.name] = p.value;
    if (typeof p.value === "object")
      for (const [k, v] of Object.entries(p.value)) body.form[`${f.name}.${k}`] = v;
    else body.form[f.name] = String(p.value);
    body.aRef ||= Boolean(p.aRef);
  }
  return body;
}
