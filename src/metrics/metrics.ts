// Every Prometheus metric Cadre exports, in one registry per process (the web server's and
// the worker's each serve theirs at /metrics, scrape.ts). Labels are bounded by design: a
// route is its pattern, never its path; a trigger, status, stop reason or step type comes
// from the code's own short lists; a model name, which an agent's owner types, passes only
// until MAX_LABEL_VALUES of them have been seen and is `other` after that.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: "cadre_" });

const MAX_LABEL_VALUES = 50;
const seen = new Map<string, Set<string>>();

/** `value` while this label has taken fewer than MAX_LABEL_VALUES values, else `other`. */
export function bounded(label: string, value: string): string {
  const values = seen.get(label) ?? new Set<string>();
  seen.set(label, values);
  if (values.has(value)) return value;
  if (values.size >= MAX_LABEL_VALUES) return "other";
  values.add(value);
  return value;
}

const registers = [registry];

export const httpRequests = new Histogram({
  name: "cadre_http_request_duration_seconds",
  help: "HTTP requests by method, route pattern and status, with their latency",
  labelNames: ["method", "route", "status"] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers,
});

export const runsStarted = new Counter({
  name: "cadre_runs_started_total",
  help: "Agent runs a worker started (claimed before their first step), by trigger",
  labelNames: ["trigger"] as const,
  registers,
});

export const runsEnded = new Counter({
  name: "cadre_runs_ended_total",
  help: "Agent runs a worker ended, by trigger, status and stop reason",
  labelNames: ["trigger", "status", "stop_reason"] as const,
  registers,
});

export const runSteps = new Counter({
  name: "cadre_run_steps_total",
  help: "Steps agent runs recorded in a worker, by type",
  labelNames: ["type"] as const,
  registers,
});

export const llmCalls = new Histogram({
  name: "cadre_llm_call_duration_seconds",
  help: "LLM calls by model and outcome (ok, or why it failed), with their latency",
  labelNames: ["model", "outcome"] as const,
  buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 60, 120],
  registers,
});

export const llmTokens = new Counter({
  name: "cadre_llm_tokens_total",
  help: "Tokens of charged LLM calls, by model and kind (input, cached input, cache write, output)",
  labelNames: ["model", "kind"] as const,
  registers,
});

export const llmCost = new Counter({
  name: "cadre_llm_cost_usd_total",
  help: "What charged LLM calls cost, in US dollars, by model (the ledger's prices)",
  labelNames: ["model"] as const,
  registers,
});

export const rateLimited = new Counter({
  name: "cadre_rate_limited_total",
  help: "API and MCP requests refused with 429, by the limit they hit (token or tenant)",
  labelNames: ["limit"] as const,
  registers,
});

export const auditDropped = new Counter({
  name: "cadre_audit_rows_dropped_total",
  help: "Audit rows given up: refused by the database, or past the buffer's bound while it was away",
  registers,
});

const liveStreams = new Gauge({
  name: "cadre_live_streams",
  help: "Live streams (a run's events over SSE) open now",
  registers,
});

/** Counts a live stream as open; call what it returns when it closes (a second call does nothing). */
export function openLiveStream(): () => void {
  liveStreams.inc();
  let open = true;
  return () => {
    if (open) liveStreams.dec();
    open = false;
  };
}

/** What a worker's gauges read when scraped (runtime.ts adds its own). */
export interface WorkerGauges {
  jobCounts(): Promise<{ queue: string; state: string; count: number }[]>;
  pendingApprovals(): Promise<number>;
}

const sources = new Set<WorkerGauges>();

/** Adds a worker's gauges to its process's scrape; call what it returns when it closes. */
export function addWorkerGauges(workerGauges: WorkerGauges): () => void {
  sources.add(workerGauges);
  return () => sources.delete(workerGauges);
}

// Read at scrape time. A source that cannot answer (Redis or Postgres away) leaves its
// gauge as last read rather than failing the whole scrape.
new Gauge({
  name: "cadre_queue_jobs",
  help: "Jobs in each queue by state (waiting, active, delayed, paused), as the worker last read them",
  labelNames: ["queue", "state"] as const,
  registers,
  async collect() {
    const counts = await Promise.all([...sources].map((s) => s.jobCounts().catch(() => null)));
    if (counts.some((c) => c === null)) return;
    this.reset();
    for (const c of counts.flat()) if (c) this.inc({ queue: c.queue, state: c.state }, c.count);
  },
});

new Gauge({
  name: "cadre_pending_approvals",
  help: "Agent actions waiting for a person's review, in every workspace",
  registers,
  async collect() {
    // Several runtimes in one process (tests) read the same database: one number, not their sum.
    const counts = await Promise.all([...sources].map((s) => s.pendingApprovals().catch(() => null)));
    const known = counts.filter((c): c is number => c !== null);
    if (known.length) this.set(Math.max(...known));
  },
});
