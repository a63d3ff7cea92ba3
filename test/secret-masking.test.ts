// What counts as a secret before text leaves for a model: each credential shape becomes a
// placeholder naming its kind, in plain text and as pages escape it, and the ids, hashes
// and prose that merely look alike pass through untouched.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  describeMasked,
  type MaskCounts,
  maskDeep,
  maskText,
} from "../src/services/agents/core/secret-masking.ts";
import { mdEscape } from "../src/services/registry/markdown.ts";

const hex = (n: number) => randomBytes(n).toString("hex");
const b62 = (n: number) => {
  const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from(randomBytes(n), (b) => abc[b % 62]).join("");
};

const SECRETS: [kind: string, secret: string][] = [
  ["cadre token", `cadre_${hex(4)}_${randomBytes(24).toString("base64url")}`],
  ["OpenAI key", `sk-${b62(20)}T3BlbkFJ${b62(20)}`],
  ["OpenAI key", `sk-proj-${b62(40)}_${b62(40)}-${b62(20)}`],
  ["Anthropic key", `sk-ant-api03-${b62(60)}-${b62(20)}AA`],
  ["AWS key", "AKIAIOSFODNN7EXAMPLE"],
  ["GitHub token", `ghp_${b62(36)}`],
  ["GitHub token", `github_pat_11${b62(20)}_${b62(59)}`],
  ["Slack token", `xoxb-123456789012-1234567890123-${b62(24)}`],
  ["Slack webhook", `https://hooks.slack.com/services/T0${b62(8)}/B0${b62(8)}/${b62(24)}`],
  ["Google API key", `AIzaSy${b62(33)}`],
  ["Stripe key", `sk_live_51${b62(40)}`],
  ["Stripe key", `rk_live_51${b62(40)}`],
  ["Stripe key", `whsec_${b62(32)}`],
  ["cadre webhook secret", `whsec_${b62(20)}_-${b62(21)}`],
  ["cadre webhook secret", `whsec_${b62(43)}`],
  ["JWT", `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.${randomBytes(32).toString("base64url")}`],
];

function masked(text: string) {
  const counts: MaskCounts = {};
  return { text: maskText(text, counts), counts };
}

describe("maskText", () => {
  it.each(SECRETS)("masks a %s, in plain text and escaped as pages escape titles", (kind, secret) => {
    for (const shown of [secret, mdEscape(secret)]) {
      const r = masked(`Before ${shown} after.`);
      expect(r.text).toBe(`Before [masked: ${kind}] after.`);
      expect(r.counts).toEqual({ [kind]: 1 });
    }
  });

  it("masks private-key blocks whole, even cut off by a capped page", () => {
    const body = Array.from({ length: 5 }, () => randomBytes(48).toString("base64")).join("\n");
    const pem = `-----BEGIN RSA PRIVATE KEY-----\n${body}\n-----END RSA PRIVATE KEY-----`;
    expect(masked(`key:\n${pem}\nthanks`).text).toBe("key:\n[masked: private key]\nthanks");
    const cut = `-----BEGIN OPENSSH PRIVATE KEY-----\n${body.slice(0, 120)}\n\n[… page truncated …]`;
    expect(masked(cut).text).toBe("[masked: private key]\n\n[… page truncated …]");
  });

  it("masks the credential of a header or a URL and keeps the rest", () => {
    const token = b62(30);
    const r = masked(
      `curl -H "Authorization: Bearer ${token}9" https://x.io\nAuthorization: Basic ${Buffer.from("me:pw").toString("base64")}\npostgres://app:${hex(8)}@db.internal:5432/prod`,
    );
    expect(r.text).toBe(
      'curl -H "Authorization: Bearer [masked: bearer token]" https://x.io\nAuthorization: Basic [masked: basic auth header]\npostgres://app:[masked: URL password]@db.internal:5432/prod',
    );
    expect(r.counts).toEqual({ "bearer token": 1, "basic auth header": 1, "URL password": 1 });
  });

  it("counts a token inside a header once, as what it is", () => {
    const token = `cadre_${hex(4)}_${randomBytes(24).toString("base64url")}`;
    expect(masked(`Authorization: Bearer ${token}`)).toEqual({
      text: "Authorization: Bearer [masked: cadre token]",
      counts: { "cadre token": 1 },
    });
  });

  it("leaves ids, hashes, URLs and prose that merely look alike", () => {
    const text = [
      "Note abc123def456 at /studios/general/notes/k3m9p2x7q4w8, commit 3f2a9c1e4b5d6f7a8b9c0d1e2f3a4b5c6d7e8f90.",
      "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 in https://cdn.example.com/a/3f2a9c1e4b5d6f7a8b9c0d1e2f3a4b5c.png?v=2",
      "Read sk-learn-and-pandas-for-everyone, the task-force-report-2024-final, and ask-the-team.",
      "Bearer tokens go in `Authorization: Bearer <token>`; see https://user@example.com/ and http://example.com:8080/a@b.",
      'The basic idea: eyJ is base64 for {", AKIA is a prefix, and cadre_ starts our tokens.',
      "- `set_agent_api_key` (api_key: string) — Pick the key it calls its model with",
    ].join("\n");
    expect(masked(text)).toEqual({ text, counts: {} });
  });
});

describe("maskDeep", () => {
  it("masks every string of a message list and keeps untouched objects as they were", () => {
    const key = `sk-${b62(48)}`;
    const clean = { role: "system", content: "You are an agent." };
    const messages = [clean, { role: "user", content: [{ type: "text", text: `use ${key}` }] }];
    const counts: MaskCounts = {};
    const out = maskDeep(messages, counts);
    expect(out[0]).toBe(clean);
    expect(out[1]).toEqual({ role: "user", content: [{ type: "text", text: "use [masked: OpenAI key]" }] });
    expect(messages[1]).not.toEqual(out[1]);
    expect(describeMasked(counts)).toBe("1 secret (1 OpenAI key)");
  });
});
