// Credential-shaped strings are replaced by a placeholder naming their kind before any
// text leaves for a model, and before a step is stored: a key pasted into a note by
// mistake must not reach a provider's logs, nor outlive the note in a run's record. The
// model sees `[masked: OpenAI key]`, so it knows something was there and can say so.
//
// Only shapes that are credentials by their prefix or their context are masked: our own
// tokens, providers' documented key formats, private-key blocks, Authorization headers,
// passwords in URLs and JWTs. Nothing is masked for looking random alone, so ids, commit
// hashes, checksums and base64 in ordinary text reach the model as they are.

import { plural } from "../../../lib/plural.ts";

interface Rule {
  kind: string;
  re: RegExp;
  /** Which capture group is the secret (the rest of the match is kept); absent: all of it. */
  group?: number;
  /** A second look, for prefixes ordinary words can share. */
  check?: (secret: string) => boolean;
}

/**
 * A run of 16+ letters and digits that mixes in digits or both cases: generated, as keys
 * are, not a slug such as sk-learn-and-pandas-tips.
 */
const random = (text: string) =>
  (text.match(/[A-Za-z0-9]{16,}/g) ?? []).some(
    (run) => /[A-Za-z]/.test(run) && (/\d/.test(run) || (/[a-z]/.test(run) && /[A-Z]/.test(run))),
  );
const hasDigit = (text: string) => /\d/.test(text);

// In this order: a block or a header first, so the key inside it is counted once, as what it is.
// Pages escape markdown in titles and excerpts (`cadre\_…`), so an underscore may come
// with a backslash: literal ones are `\\?_`, and classes that hold `_` hold `\\` too.
const RULES: Rule[] = [
  {
    kind: "private key",
    // Up to its END line, or to where a capped page cut it off.
    re: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?:\s*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+:[^\n]*))*)/g,
  },
  { kind: "URL password", re: /(:\/\/[^\s:/?#@[\]]+:)([^\s/?#@[\]]+)@/g, group: 2 },
  { kind: "cadre token", re: /\bcadre\\?_[a-z0-9]{8}\\?_[A-Za-z0-9_\\-]{20,}/g },
  // Ours (src/services/agents/automations/webhooks.ts): 32 random bytes in base64url. Before Stripe's
  // `whsec_` (32 letters and digits), which would stop at the first - or _ and leave a tail.
  { kind: "cadre webhook secret", re: /\bwhsec\\?_(?:\\?[A-Za-z0-9_-]){43}(?![A-Za-z0-9_-])/g },
  { kind: "Anthropic key", re: /\bsk-ant-[A-Za-z0-9_\\-]{20,}/g },
  { kind: "Stripe key", re: /\b(?:sk|rk)\\?_(?:live|test)\\?_[A-Za-z0-9]{16,}|\bwhsec\\?_[A-Za-z0-9]{24,}/g },
  { kind: "OpenAI key", re: /\bsk-[A-Za-z0-9_\\-]{20,}/g, check: random },
  { kind: "AWS key", re: /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g },
  { kind: "GitHub token", re: /\b(?:gh[pousr]\\?_[A-Za-z0-9]{36,}|github\\?_pat\\?_[A-Za-z0-9_\\]{22,})/g },
  { kind: "Slack token", re: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g },
  { kind: "Slack webhook", re: /https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9/]{20,}/g },
  { kind: "Google API key", re: /\bAIza[A-Za-z0-9_\\-]{35,}/g },
  { kind: "JWT", re: /\beyJ[A-Za-z0-9_\\-]{8,}\.eyJ[A-Za-z0-9_\\-]{8,}\.[A-Za-z0-9_\\-]{16,}/g },
  // "Bearer tokens are…" is prose: a token has a digit somewhere.
  { kind: "bearer token", re: /\b(Bearer\s+)([A-Za-z0-9._~+/\\-]{16,}=*)/g, group: 2, check: hasDigit },
  { kind: "basic auth header", re: /\b(Authorization:\s*Basic\s+)([A-Za-z0-9+/\\]{4,}=*)/gi, group: 2 },
];

export type MaskCounts = Record<string, number>;

export const placeholder = (kind: string) => `[masked: ${kind}]`;

/** The text with every credential-shaped string replaced, counting each kind into `counts`. */
export function maskText(text: string, counts: MaskCounts = {}): string {
  let out = text;
  for (const rule of RULES)
    out = out.replace(rule.re, (match, ...groups: unknown[]) => {
      const secret = rule.group ? String(groups[rule.group - 1]) : match;
      if (rule.check && !rule.check(secret)) return match;
      counts[rule.kind] = (counts[rule.kind] ?? 0) + 1;
      if (!rule.group) return placeholder(rule.kind);
      const before = groups.slice(0, rule.group - 1).join("");
      return `${before}${placeholder(rule.kind)}${match.slice(before.length + secret.length)}`;
    });
  return out;
}

/** Every string inside a JSON-like value masked (objects and arrays copied, only when something changed). */
export function maskDeep<T>(value: T, counts: MaskCounts = {}): T {
  if (typeof value === "string") return maskText(value, counts) as T;
  if (Array.isArray(value)) {
    const out = value.map((v) => maskDeep(v, counts));
    return (out.some((v, i) => v !== value[i]) ? out : value) as T;
  }
  if (value && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [key, nested] of Object.entries(value)) {
      out[key] = maskDeep(nested, counts);
      if (out[key] !== nested) changed = true;
    }
    return (changed ? out : value) as T;
  }
  return value;
}

/** "3 secrets (2 cadre tokens, 1 OpenAI key)", for the run page; stored counts come back in any order. */
export function describeMasked(counts: MaskCounts): string {
  const kinds = Object.entries(counts)
    .filter(([, count]) => count > 0)
    .sort(
      ([leftKind, leftCount], [rightKind, rightCount]) =>
        rightCount - leftCount || leftKind.localeCompare(rightKind),
    );
  const total = kinds.reduce((t, [, count]) => t + count, 0);
  return `${plural(total, "secret")} (${kinds.map(([kind, count]) => plural(count, kind)).join(", ")})`;
}
