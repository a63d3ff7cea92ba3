// What a claimed run starts with: the run, its agent and the agent's owner, the tenant, and
// its first page (/whoami, with the month's spend). Read by the claim's own statement
// (runs.ts), because 200 runs starting at once each paid for six more reads before their
// first LLM call, and on this hardware a statement costs what its round trip costs.
import { Prisma, type SubagentTaskRun, type Tenant, type User } from "../../../generated/prisma/client.ts";
import { type Actor, toActor } from "../../registry/types.ts";
import { parseWhoami, type Whoami, whoamiSql } from "./whoami-read.ts";

export type ClaimedRun = Pick<
  SubagentTaskRun,
  | "id"
  | "tenantId"
  | "agentId"
  | "task"
  | "model"
  | "maxSteps"
  | "timeoutSeconds"
  | "stepsCount"
  | "status"
  | "chainDepth"
  | "attempts"
  | "leaseOwner"
  | "triggerKind"
  | "label"
  | "pauseRequestedAt"
  | "triggerTraceparent"
  | "traceparent"
  | "replayOfRunId"
  | "replayFromStep"
  | "policy"
  | "policyPinned"
  | "dry"
  | "lane"
  | "experimentId"
>;

/** The agent as it acts; its owner's name is on its /whoami. */
export type RunAgent = Pick<
  User,
  | "id"
  | "tenantId"
  | "handle"
  | "name"
  | "kind"
  | "parentId"
  | "ownerStudioId"
  | "tenantAdmin"
  | "agentConfig"
>;

export interface RunStart {
  run: ClaimedRun;
  agent: RunAgent;
  tenant: Tenant;
  /** The run's first page, /whoami, as the agent sees it now; it carries the month's spend. */
  whoami: Whoami;
  /** Who woke it without managing its agent: it reads within their view. */
  viewers: Actor[];
}

/**
 * One JSON value: the claimed run `c` (a row of the claim's UPDATE), with everything its
 * start needs. Timestamps without a zone are UTC; `AT TIME ZONE` states it.
 */
export const runStartSql = (date: Date) => Prisma.sql`(
  SELECT json_build_object(
    'run', json_build_object('id', c.id, 'tenantId', c.tenant_id, 'agentId', c.agent_id, 'task', c.task,
      'model', c.model, 'maxSteps', c.max_steps, 'timeoutSeconds', c.timeout_seconds,
      'stepsCount', c.steps_count, 'status', c.status, 'chainDepth', c.chain_depth, 'attempts', c.attempts,
      'leaseOwner', c.lease_owner, 'triggerKind', c.trigger_kind, 'label', c.label,
      'pauseRequestedAt', c.pause_requested_at,
      'triggerTraceparent', c.trigger_traceparent, 'traceparent', c.traceparent,
      'replayOfRunId', c.replay_of_run_id, 'replayFromStep', c.replay_from_step, 'policy', c.policy,
      'policyPinned', c.policy_pinned, 'dry', c.dry, 'lane', c.lane,
      'experimentId', c.experiment_id),
    'agent', json_build_object('id', u.id, 'tenantId', u.tenant_id, 'handle', u.handle, 'name', u.name,
      'kind', u.kind, 'parentId', u.parent_id, 'ownerStudioId', u.owner_studio_id, 'tenantAdmin', u.tenant_admin, 'agentConfig', u.agent_config),
    'tenant', json_build_object('id', t.id, 'subdomain', t.subdomain, 'name', t.name, 'settings', t.settings, 'twoFactorPolicy', t.two_factor_policy, 'toolHosts', coalesce(t.tool_hosts, '{}'),
      'createdAt', t.created_at AT TIME ZONE 'UTC'),
    'whoami', ${whoamiSql(Prisma.sql`c.agent_id`, Prisma.sql`c.tenant_id`, Prisma.sql`c.viewer_ids`, Prisma.sql`c.label`, date)},
    'viewers', (SELECT coalesce(json_agg(json_build_object('id', v.id, 'tenantId', v.tenant_id, 'handle', v.handle,
        'name', v.name, 'kind', v.kind, 'parentId', v.parent_id, 'tenantAdmin', v.tenant_admin)), '[]')
      FROM users v WHERE v.id = ANY(c.viewer_ids)))
  FROM users u JOIN tenants t ON t.id = c.tenant_id WHERE u.id = c.agent_id)`;

interface StartJson {
  run: ClaimedRun;
  agent: RunAgent;
  tenant: Omit<Tenant, "createdAt"> & { createdAt: string };
  whoami: Parameters<typeof parseWhoami>[0];
  viewers: Parameters<typeof toActor>[0][];
}

export function parseRunStart(json: StartJson | null): RunStart | null {
  if (!json) return null;
  return {
    run: json.run,
    agent: json.agent,
    tenant: { ...json.tenant, createdAt: new Date(json.tenant.createdAt) },
    whoami: parseWhoami(json.whoami),
    viewers: json.viewers.map(toActor),
  };
}
