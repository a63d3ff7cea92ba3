// The channel every outbox write NOTIFYs on commit (a trigger on `events`: the
// `events_notify` migration names it too) and the relay LISTENs to. A module of its own, so
// the relay's thread can name it without loading the Prisma client.
export const EVENTS_CHANNEL = "cadre_events";

/**
 * What live views listen to (src/services/live/): steps, runs and comments NOTIFY it on
 * commit by triggers (the `live_runs` migration), and a worker says on it that an LLM call
 * started when no such row said so (navigator.ts).
 */
export const LIVE_CHANNEL = "cadre_live";
