// The workspace's model catalogue: the models its agents may be set to use. One list per
// workspace, from the price list (the repo's and the workspace's own prices) and the models
// each of its provider keys listed when last asked (a key's test, or a refresh by an admin,
// both kept on the key's row). The agent page's select offers it; every surface that sets a
// model (forms, the markdown API, MCP) is checked against it here, so a typo is a 400 at
// the field, not a run that fails later.
import type { Db } from "../../db/prisma.ts";
import type { Tenant } from "../../generated/prisma/client.ts";
import { type Issue, ValidationError } from "../../lib/errors.ts";
import { DecryptError } from "../../lib/secrets.ts";
import { tenantSettings } from "../agents/core/settings.ts";
import { checkResolvedUrl, listModels, PROVIDER_LABELS, type Provider } from "./keys.ts";
import { listName, PRICE_LIST, type Price } from "./pricing.ts";

export interface CatalogueModel {
  name: string;
  /** Where it comes from, as the select groups it: "Price list · OpenAI", "Key “Work” (OpenAI)". */
  group: string;
  /** USD per 1M tokens, when a price list names it. */
  price?: Price;
}

const listProvider = (name: string) => (name.startsWith("claude") ? "Anthropic" : "OpenAI");

type Keyed = { id: string; label: string; provider: string; listedModels: string[] };

/**
 * Every model of the workspace, grouped. A key's group names it only for callers who may see
 * it (`visibleKeys`: their own or their agent's keys); others' keys are "a key in the workspace".
 */
export async function modelCatalogue(
  db: Db,
  tenant: Pick<Tenant, "id" | "settings">,
  visibleKeys: ReadonlySet<string> = new Set(),
): Promise<CatalogueModel[]> {
  const own = tenantSettings(tenant).pricing;
  const keys: Keyed[] = await db.agentApiKey.findMany({
    where: { tenantId: tenant.id, revokedAt: null },
    orderBy: { createdAt: "asc" },
    select: { id: true, label: true, provider: true, listedModels: true },
  });
  const priceOf = (name: string): Price | undefined => {
    const ownName = listName(name, Object.keys(own));
    if (ownName) return own[ownName];
    const listedName = listName(name, Object.keys(PRICE_LIST));
    return listedName ? PRICE_LIST[listedName] : undefined;
  };
  const out: CatalogueModel[] = [];
  const seen = new Set<string>();
  const add = (name: string, group: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    const price = priceOf(name);
    out.push({ name, group, ...(price && { price }) });
  };
  for (const name of Object.keys(own).sort()) add(name, "This workspace's prices");
  for (const name of Object.keys(PRICE_LIST)) add(name, `Price list · ${listProvider(name)}`);
  for (const key of keys) {
    const provider = PROVIDER_LABELS[key.provider as Provider] ?? key.provider;
    const group = visibleKeys.has(key.id)
      ? `Key “${key.label}” (${provider})`
      : `A key in the workspace (${provider})`;
    for (const name of key.listedModels) add(name, group);
  }
  return out;
}

/** "$2.50 in / $10.00 out per 1M tokens", or that no price list names it. */
export function priceLabel(catalogueModel: CatalogueModel): string {
  if (!catalogueModel.price) return "no list price";
  const dollars = (count: number) => `$${count < 0.1 ? count.toFixed(3) : count.toFixed(2)}`;
  return `${dollars(catalogueModel.price.input)} in / ${dollars(catalogueModel.price.output)} out per 1M tokens`;
}

/** Edit distance (Levenshtein), for "did you mean". */
function distance(source: string, target: string): number {
  let prev = Array.from({ length: target.length + 1 }, (_, j) => j);
  for (let index = 1; index <= source.length; index++) {
    const cur = [index];
    for (let innerIndex = 1; innerIndex <= target.length; innerIndex++)
      cur[innerIndex] = Math.min(
        prev[innerIndex]! + 1,
        cur[innerIndex - 1]! + 1,
        prev[innerIndex - 1]! + (source[index - 1] === target[innerIndex - 1] ? 0 : 1),
      );
    prev = cur;
  }
  return prev[target.length]!;
}

/** The catalogue's names closest to a wrong one: a few, nearest first. */
export function closeMatches(wrong: string, names: string[], max = 3): string[] {
  const typed = wrong.toLowerCase();
  return names
    .map((name) => {
      const lower = name.toLowerCase();
      // A name that contains the typed one (or is contained in it), or starts with a near miss of
      // it (`claude-haku` for `claude-haiku-4-5`), is close, if not as close as a typo of the whole.
      const edits = Math.min(distance(typed, lower), distance(typed, lower.slice(0, typed.length + 1)) + 1);
      return { name, edits: lower.includes(typed) || typed.includes(lower) ? Math.min(edits, 2) : edits };
    })
    .filter((match) => match.edits <= Math.max(2, Math.floor(typed.length / 3)))
    .sort((left, right) => left.edits - right.edits || left.name.localeCompare(right.name))
    .slice(0, max)
    .map((match) => match.name);
}

/** Whether the catalogue has the model: by name, or a dated or routed id of a priced one (`gpt-4o-2024-08-06`). */
function inCatalogue(name: string, catalogue: CatalogueModel[]): boolean {
  if (catalogue.some((m) => m.name === name)) return true;
  const priced = catalogue.filter((m) => m.price).map((m) => m.name);
  return listName(name, priced) !== null;
}

/**
 * Refuses models the workspace's catalogue does not have: a 400 naming the field by its label,
 * with the closest names. `names` are the values as sent (several for fallback models).
 */
/** The models of `names` the workspace does not offer, as the issue naming `field` (none: all on offer). */
export async function catalogueIssues(
  db: Db,
  tenant: Pick<Tenant, "id" | "settings">,
  field: { name: string; label: string },
  names: string[],
): Promise<Issue[]> {
  if (!names.length) return [];
  const catalogue = await modelCatalogue(db, tenant);
  const unknown = names.filter((n) => !inCatalogue(n, catalogue));
  if (!unknown.length) return [];
  const all = catalogue.map((m) => m.name);
  const message = unknown
    .map((name) => {
      const near = closeMatches(name, all);
      return `“${name}” is not in this workspace's model catalogue${near.length ? ` (did you mean ${near.join(", ")}?)` : ""}`;
    })
    .join("; ");
  return [
    {
      field: field.name,
      label: field.label,
      message: `${message}. The models on offer are listed at /settings/agents`,
    },
  ];
}

export async function assertInCatalogue(
  db: Db,
  tenant: Pick<Tenant, "id" | "settings">,
  field: { name: string; label: string },
  names: string[],
): Promise<void> {
  const issues = await catalogueIssues(db, tenant, field, names);
  if (issues.length) throw new ValidationError(issues);
}

export interface Refreshed {
  keys: number;
  models: number;
  failed: { label: string; why: string }[];
}

/** Asks every live key of the workspace for its models again, and keeps what each lists. */
export async function refreshListings(db: Db, tenantId: string, timeoutMs = 10_000): Promise<Refreshed> {
  const keys = await db.agentApiKey.findMany({ where: { tenantId, revokedAt: null } });
  const out: Refreshed = { keys: keys.length, models: 0, failed: [] };
  // One at a time on purpose: a workspace has a handful of keys, and a provider that hangs
  // holds the refresh for its timeout, not every other key's connection with it.
  for (const key of keys) {
    const blocked = await checkResolvedUrl(key.baseUrl);
    if (blocked) {
      out.failed.push({ label: key.label, why: blocked });
      continue;
    }
    try {
      const listed = await listModels(key, timeoutMs);
      out.models += listed.length;
      await db.agentApiKey.update({
        where: { id: key.id },
        data: { listedModels: listed, modelsListedAt: new Date() },
      });
    } catch (err) {
      // The listing it had stays: a provider briefly down must not empty the catalogue.
      const status = (err as { status?: number }).status;
      const why =
        err instanceof DecryptError
          ? "it cannot be decrypted with the server's keys"
          : status
            ? `the provider answered ${status}`
            : "the provider could not be reached";
      out.failed.push({ label: key.label, why });
    }
  }
  return out;
}
