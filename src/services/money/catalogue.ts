// The workspace's model catalogue: the models its agents may be set to use. One list per
// workspace, from the price list (the repo's and the workspace's own prices) and the models
// each of its provider keys listed when last asked (a key's test, or a refresh by an admin,
// both kept on the key's row). The agent page's select offers it; every surface that sets a
// model (forms, the markdown API, MCP) is checked against it here, so a typo is a 400 at
// the field, not a run that fails later.
import type { Db } from "../../db/prisma.ts";
import type { Tenant } from "../../generated/prisma/client.ts";
import { ValidationError } from "../../lib/errors.ts";
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
    const o = listName(name, Object.keys(own));
    if (o) return own[o];
    const l = listName(name, Object.keys(PRICE_LIST));
    return l ? PRICE_LIST[l] : undefined;
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
  const d = (count: number) => `$${count < 0.1 ? count.toFixed(3) : count.toFixed(2)}`;
  return `${d(catalogueModel.price.input)} in / ${d(catalogueModel.price.output)} out per 1M tokens`;
}

/** Edit distance (Levenshtein), for "did you mean". */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let index = 1; index <= a.length; index++) {
    const cur = [index];
    for (let innerIndex = 1; innerIndex <= b.length; innerIndex++)
      cur[innerIndex] = Math.min(
        prev[innerIndex]! + 1,
        cur[innerIndex - 1]! + 1,
        prev[innerIndex - 1]! + (a[index - 1] === b[innerIndex - 1] ? 0 : 1),
      );
    prev = cur;
  }
  return prev[b.length]!;
}

/** The catalogue's names closest to a wrong one: a few, nearest first. */
export function closeMatches(wrong: string, names: string[], max = 3): string[] {
  const w = wrong.toLowerCase();
  return names
    .map((n) => {
      const l = n.toLowerCase();
      // A name that contains the typed one (or is contained in it), or starts with a near miss of
      // it (`claude-haku` for `claude-haiku-4-5`), is close, if not as close as a typo of the whole.
      const d = Math.min(distance(w, l), distance(w, l.slice(0, w.length + 1)) + 1);
      return { n, d: l.includes(w) || w.includes(l) ? Math.min(d, 2) : d };
    })
    .filter((x) => x.d <= Math.max(2, Math.floor(w.length / 3)))
    .sort((x, y) => x.d - y.d || x.n.localeCompare(y.n))
    .slice(0, max)
    .map((x) => x.n);
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
export async function assertInCatalogue(
  db: Db,
  tenant: Pick<Tenant, "id" | "settings">,
  field: { name: string; label: string },
  names: string[],
): Promise<void> {
  if (!names.length) return;
  const catalogue = await modelCatalogue(db, tenant);
  const unknown = names.filter((n) => !inCatalogue(n, catalogue));
  if (!unknown.length) return;
  const all = catalogue.map((m) => m.name);
  const message = unknown
    .map((n) => {
      const near = closeMatches(n, all);
      return `“${n}” is not in this workspace's model catalogue${near.length ? ` (did you mean ${near.join(", ")}?)` : ""}`;
    })
    .join("; ");
  throw new ValidationError([
    {
      field: field.name,
      label: field.label,
      message: `${message}. The models on offer are listed at /settings/agents`,
    },
  ]);
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
  for (const k of keys) {
    const blocked = await checkResolvedUrl(k.baseUrl);
    if (blocked) {
      out.failed.push({ label: k.label, why: blocked });
      continue;
    }
    try {
      const listed = await listModels(k, timeoutMs);
      out.models += listed.length;
      await db.agentApiKey.update({
        where: { id: k.id },
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
      out.failed.push({ label: k.label, why });
    }
  }
  return out;
}
