// What a person is told of, and how: per kind of news, in the app only, by mail at once, in
// a daily digest, or not at all. Stored on the person (users.reach_prefs), read through one
// schema with defaults, so a person who never chose gets the sensible ones.
import { z } from "zod";

export const REACH_KINDS = ["approval", "question", "cost", "run_failed"] as const;
export type ReachKind = (typeof REACH_KINDS)[number];

export const CHANNELS = ["app", "email", "digest", "off"] as const;
export type Channel = (typeof CHANNELS)[number];

export const KIND_LABELS: Record<ReachKind, string> = {
  approval: "Actions waiting for your approval",
  question: "Questions from your agents",
  cost: "Cost alerts",
  run_failed: "Runs that failed or timed out",
};

export const CHANNEL_LABELS: Record<Channel, string> = {
  app: "In the app only",
  email: "Email at once",
  digest: "Daily digest",
  off: "Off",
};

// What someone must act on reaches them at once; what they should know waits for the digest.
export const DEFAULT_PREFS: Record<ReachKind, Channel> = {
  approval: "email",
  question: "email",
  cost: "email",
  run_failed: "digest",
};

const prefsSchema = z.object(
  Object.fromEntries(REACH_KINDS.map((k) => [k, z.enum(CHANNELS).catch(DEFAULT_PREFS[k])])) as Record<
    ReachKind,
    z.ZodCatch<z.ZodEnum<{ [C in Channel]: C }>>
  >,
);

/** A person's choices, each kind defaulted (a stored value that no longer parses reads as the default). */
export function reachPrefs(stored: unknown): Record<ReachKind, Channel> {
  const given = stored && typeof stored === "object" ? (stored as Record<string, unknown>) : {};
  const filled = Object.fromEntries(REACH_KINDS.map((k) => [k, given[k] ?? DEFAULT_PREFS[k]]));
  return prefsSchema.parse(filled) as Record<ReachKind, Channel>;
}

/** The kind of news an event is, for people (null: it reaches nobody by mail). */
export function reachKindOf(eventType: string, stopReason?: string | null): ReachKind | null {
  if (eventType === "approval.requested") return "approval";
  if (eventType === "run.waiting") return stopReason === "awaiting_approval" ? null : "question";
  if (eventType === "usage.threshold" || eventType === "agent.paused") return "cost";
  if (eventType === "run.failed" || eventType === "run.timed_out") return "run_failed";
  return null;
}

// Whether this server sends mail (SMTP_URL), set once at start by the web app and the worker:
// settings pages say so rather than offer mail that never comes.
let mailOn = false;
export const setMailConfigured = (configured: boolean) => {
  mailOn = configured;
};
export const mailConfigured = () => mailOn;
