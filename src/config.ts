// The one place that reads the environment. Parsed once at start; every problem is
// printed together and the process exits, so a misconfigured deploy fails loudly.
import { availableParallelism } from "node:os";
import { getHeapStatistics } from "node:v8";
import { z } from "zod";
import { DEV_ENCRYPTION_KEYS, parseMasterKeys, usesDevelopmentKey } from "./lib/secrets.ts";
import type { TracingOptions } from "./lib/telemetry.ts";

/** The most agent runs a worker holds by default, whatever its heap. */
export const MAX_DEFAULT_CONCURRENCY = 1000;

// The prompt budget's bounds live here, at the bottom of the layers: the prompt builder
// (services/agents/prompt/prompt.ts) reads them from its settings, never the other way.
export const DEFAULT_PROMPT_BUDGET = 6_000;
export const MIN_PROMPT_BUDGET = 2_000;
/**
 * Heap a waiting run may take, with room for the garbage between collections: a worker
 * holding 1,000 measured about 60 KB live each (bench/HISTORY.md, "Thousands of waiting runs").
 */
const HEAP_PER_RUN = 256 * 1024;
/** What the worker itself takes before any run: modules, Prisma, BullMQ, the relay's thread. */
const HEAP_BASE = 128 * 2 ** 20;

/** The default WORKER_CONCURRENCY: as many runs as the heap holds, up to 1,000, at least 10. */
export function workerConcurrency(heapLimitBytes: number): number {
  const fits = Math.floor((heapLimitBytes - HEAP_BASE) / HEAP_PER_RUN);
  return Math.max(10, Math.min(MAX_DEFAULT_CONCURRENCY, fits));
}

const schema = z.object({
  NODE_ENV: z.enum(["development", "test", "production"]).default("development"),
  HOST: z.string().default("127.0.0.1"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  BASE_DOMAIN: z.string().min(1).default("localhost"),
  PUBLIC_SCHEME: z.enum(["http", "https"]).default("http"),
  // The workspace served on a host that is no subdomain of BASE_DOMAIN (the bare domain, an IP,
  // 127.0.0.1:3000): one team needs no wildcard DNS or certificate (plugins/tenancy.ts).
  DEFAULT_WORKSPACE: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "a workspace's handle: lowercase letters, digits and -")
    .optional(),
  // Self-serve sign-up at the base host: closed (the default: the operator's CLI makes
  // workspaces), open to anyone, or open to addresses at these domains ("acme.com,acme.org").
  SIGNUP: z
    .string()
    .trim()
    .toLowerCase()
    .default("closed")
    .refine(
      (value) =>
        value === "closed" ||
        value === "open" ||
        value
          .split(",")
          .every((domain) =>
            /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/.test(domain.trim()),
          ),
      "closed, open, or a comma-separated list of email domains",
    ),
  DATABASE_URL: z.string().url().default("postgresql://postgres@127.0.0.1:5432/cadre"),
  // Prisma's own default, which a pool we build ourselves (adapter-pg) does not get; pg's
  // is 10. Postgres does the most work with about two busy connections per core: past that
  // its backends and ours take turns on the same cores, and each new backend plans our
  // statements with cold caches. On a busy two-core machine, 5 instead of 10 took the
  // agent-run benchmark from 75 to 81 % (bench/HISTORY.md).
  DATABASE_POOL_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(200)
    .default(2 * availableParallelism() + 1),
  // How long a transaction may wait for a pooled connection, and how long it may then take.
  // Prisma's defaults (2 s, 5 s) made a burst of agent runs (50 per worker sharing a few
  // connections) fail instead of queueing; a wait is cheap, a failed action is not.
  DATABASE_TX_MAX_WAIT_MS: z.coerce.number().int().min(100).max(600_000).default(20_000),
  DATABASE_TX_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(15_000),
  // Named (prepared) statements, so Postgres keeps their plans. Turn off behind a pooler
  // that cannot carry them across server connections (PgBouncer in transaction mode before 1.21).
  DATABASE_NAMED_STATEMENTS: z
    .enum(["0", "1", "true", "false"])
    .default("1")
    .transform((v) => v === "1" || v === "true"),
  REDIS_URL: z.string().url().default("redis://127.0.0.1:6379"),
  QUEUE_PREFIX: z
    .string()
    .regex(/^[a-z0-9_-]+$/i, "letters, digits, _ and - only")
    .default("cadre"),
  SESSION_SECRET: z
    .string()
    .min(32, "at least 32 characters")
    .default("dev-only-session-secret-change-me-0123456789"),
  // A session ends after this long unused (idle) or this long after sign-in (absolute),
  // whichever comes first (services/sessions.ts). Two weeks idle keeps someone who opens
  // Cadre weekly signed in, and kills a cookie left on a forgotten laptop; a month at most
  // bounds what a stolen cookie is worth however busy it is kept, at one sign-in a month.
  SESSION_IDLE_HOURS: z.coerce
    .number()
    .int()
    .positive()
    .max(24 * 366)
    .default(24 * 14),
  SESSION_ABSOLUTE_HOURS: z.coerce
    .number()
    .int()
    .positive()
    .max(24 * 366)
    .default(24 * 30),
  // Sensitive changes (actions marked confirmRecent: tokens, provider keys, webhook secrets,
  // agents' capabilities and rules, workspace settings) ask a person on a session for their
  // password or a two-factor code when they last confirmed longer ago than this
  // (services/accounts/step-up.ts): a session left open on a shared computer is not enough.
  STEP_UP_MINUTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 60)
    .default(10),
  // Live pages (server-sent events): a comment line this often keeps an idle stream open
  // through proxies; a stream ends after its maximum age and the browser reconnects, so a
  // viewer who lost the right to see a page stops seeing it within that time.
  LIVE_HEARTBEAT_MS: z.coerce.number().int().min(50).max(120_000).default(15_000),
  LIVE_STREAM_MAX_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
  // Failed logins (src/services/login-throttle.ts), counted per workspace in windows that
  // start at a window's first failure. An account's lock never outlasts its window, so
  // nobody can lock a person out for longer; an address's window doubles each time it
  // fills again right after a lock, up to the cap.
  LOGIN_ACCOUNT_MAX_FAILURES: z.coerce.number().int().min(1).max(1000).default(10),
  LOGIN_ADDRESS_MAX_FAILURES: z.coerce.number().int().min(1).max(10_000).default(30),
  LOGIN_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
  LOGIN_ADDRESS_MAX_LOCK_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(7 * 86_400)
    .default(6 * 3600),
  // Whose X-Forwarded-For to believe (Fastify's trustProxy: addresses, CIDRs or
  // proxy-addr's names): by default only a proxy on this machine or a private network.
  // "true" believes anyone, so any client could pick the address the login throttle counts.
  TRUST_PROXY: z
    .string()
    .default("loopback,linklocal,uniquelocal")
    .transform((v): boolean | string => (v === "true" ? true : v === "false" || v === "" ? false : v)),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  // Any OpenAI-compatible endpoint (a LiteLLM proxy, OpenAI, vLLM, Ollama). Unset: the
  // demo starts its scripted fake model and says so.
  LLM_BASE_URL: z.string().url().optional(),
  LLM_API_KEY: z.string().default("none"),
  DEMO_FAKE_LLM: z
    .enum(["0", "1", "true", "false"])
    .default("0")
    .transform((v) => v === "1" || v === "true"),
  LLM_DEFAULT_MODEL: z.string().min(1).optional(),
  LLM_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  // How long an agent's call of a connected tool may take; past it, "timed out" is the tool's result.
  TOOL_CALL_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  LLM_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(3),
  // Agent runs one worker process holds at once. A run spends nearly all its time waiting on
  // the model (seconds a call), so the limit is memory, not CPU: 1,000, or fewer when the
  // heap could not hold them (workerConcurrency). Lower it, or LLM_MAX_CONNECTIONS, to
  // protect a small self-hosted model from more calls than it can serve.
  WORKER_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(() => workerConcurrency(getHeapStatistics().heap_size_limit)),
  // The most connections (so concurrent calls) to one LLM endpoint from one worker; unset,
  // one per run the worker holds. Calls past it wait for a connection.
  LLM_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(100_000).optional(),
  // The most prompt tokens an agent's step sends, however long its run (prompt.ts): the
  // task, pages and the run's notes fill it by priority. Counted conservatively.
  PROMPT_TOKEN_BUDGET: z.coerce
    .number()
    .int()
    .min(MIN_PROMPT_BUDGET)
    .max(1_000_000)
    .default(DEFAULT_PROMPT_BUDGET),
  RUN_LEASE_SECONDS: z.coerce.number().int().min(2).max(600).default(15),
  RUN_HEARTBEAT_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  // A run whose worker is lost this many times (it died, or could not renew the run's lease)
  // is given up as `worker_lost`, so a run that crashes every worker it lands on stops.
  RUN_MAX_WORKER_LOSSES: z.coerce.number().int().min(1).max(100).default(3),
  // Master keys for secrets at rest (BYOK API keys): `version:base64(32 bytes)`, comma
  // separated; the highest version encrypts, all decrypt. Rotate by adding a version and
  // running `npm run keys:reencrypt`.
  APP_ENCRYPTION_KEYS: z
    .string()
    .default(DEV_ENCRYPTION_KEYS)
    .superRefine((value, c) => {
      try {
        parseMasterKeys(value);
      } catch (err) {
        c.addIssue({ code: "custom", message: (err as Error).message });
      }
    }),
  // Lets a BYOK base URL point at localhost or a private network (a self-hosted model).
  // Off in production: a user's key test must not become a probe of the server's network.
  BYOK_ALLOW_PRIVATE_URLS: z.enum(["0", "1", "true", "false"]).optional(),
  SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).default(5000),
  // Calls made with an API token (the markdown API and /mcp), counted in Redis so every web
  // process shares the count (plugins/rate-limit.ts): per token and per workspace, in a fixed
  // window. 0 turns a limit off. People browsing with a session are not counted.
  API_RATE_LIMIT_PER_TOKEN: z.coerce.number().int().min(0).max(1_000_000).default(600),
  API_RATE_LIMIT_PER_TENANT: z.coerce.number().int().min(0).max(10_000_000).default(3000),
  API_RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
  // Managing credentials (tokens, provider keys) is never offered to MCP clients unless the
  // operator allows it: an MCP client is an agent's tool, and a token that can mint tokens
  // can outlive its own revocation.
  MCP_MANAGE_ACTIONS: z
    .enum(["0", "1", "true", "false"])
    .default("0")
    .transform((v) => v === "1" || v === "true"),
  // The audit trail of API tokens (services/audit.ts): rows are written in batches, every
  // AUDIT_FLUSH_MS or once AUDIT_BATCH_SIZE are waiting, and kept AUDIT_RETENTION_DAYS.
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  AUDIT_FLUSH_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  AUDIT_BATCH_SIZE: z.coerce.number().int().min(1).max(10_000).default(500),
  // Prometheus /metrics (src/metrics/): scrapes send `Authorization: Bearer <METRICS_TOKEN>`;
  // unset, neither process serves it. The web server answers on its own port; the worker,
  // which has no HTTP server, listens on METRICS_HOST:METRICS_PORT only when that is set.
  METRICS_TOKEN: z.string().min(16, "at least 16 characters").optional(),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  METRICS_HOST: z.string().default("127.0.0.1"),
  // Mail (services/reach/): an SMTP server, `smtp://user:pass@host:port` or `smtps://…`.
  // Unset, nobody is mailed and everything else works as before.
  SMTP_URL: z.string().url().optional(),
  MAIL_FROM: z.string().min(3).optional(),
  // Links in mails and outgoing webhooks point at `<scheme>://<workspace>.<BASE_DOMAIN>[:PUBLIC_PORT]`;
  // unset, the port is PORT's while BASE_DOMAIN is localhost (a development server), else none.
  PUBLIC_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  // The hour (UTC) from which each person's daily digest is sent.
  DIGEST_HOUR_UTC: z.coerce.number().int().min(0).max(23).default(8),
  // Outgoing webhooks: attempts per delivery, the first retry's wait (doubling after), and
  // how many deliveries in a row may fail for good before the endpoint is turned off.
  OUTBOUND_ATTEMPTS: z.coerce.number().int().min(1).max(30).default(8),
  OUTBOUND_BACKOFF_MS: z.coerce.number().int().min(1).max(3_600_000).default(5000),
  OUTBOUND_DISABLE_AFTER: z.coerce.number().int().min(1).max(1000).default(5),
  OUTBOUND_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  // OpenTelemetry traces (lib/telemetry.ts), the standard variables: unset, no SDK is loaded.
  // The endpoint is the collector's base URL (spans go to <endpoint>/v1/traces, OTLP/HTTP
  // JSON); headers are `key=value` pairs separated by commas, values URL-encoded.
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .optional()
    .transform((v, c) => {
      const headers: Record<string, string> = {};
      for (const pair of (v ?? "").split(",").filter((p) => p.trim())) {
        const at = pair.indexOf("=");
        if (at < 1) {
          c.addIssue({ code: "custom", message: "expected key=value pairs separated by commas" });
          return z.NEVER;
        }
        headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
      }
      return headers;
    }),
  OTEL_SERVICE_NAME: z.string().min(1).default("cadre"),
  // The GenAI conventions' own switch: prompts and replies are exported (masked as they are
  // for the model) only when an operator turns this on.
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: z
    .enum(["0", "1", "true", "false"])
    .default("false")
    .transform((v) => v === "1" || v === "true"),
});

export type Config = z.infer<typeof schema>;

/** What lib/telemetry.ts's startTracing needs: nothing, and no SDK loaded, without an endpoint. */
export const tracingOptions = (c: Config): TracingOptions => ({
  endpoint: c.OTEL_EXPORTER_OTLP_ENDPOINT,
  headers: c.OTEL_EXPORTER_OTLP_HEADERS,
  serviceName: c.OTEL_SERVICE_NAME,
  captureContent: c.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
});

export function parseConfig(env: Record<string, string | undefined>): Config {
  const result = schema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join("\n")}`);
  }
  const config = result.data;
  if (config.METRICS_PORT !== undefined && !config.METRICS_TOKEN) {
    throw new Error("Invalid configuration:\n  METRICS_PORT: needs METRICS_TOKEN, which scrapes must send");
  }
  if (config.NODE_ENV === "production" && config.SESSION_SECRET.startsWith("dev-only")) {
    throw new Error("Invalid configuration:\n  SESSION_SECRET: must be set in production");
  }
  // Any listing of the published development key counts, however it is spelled or versioned.
  if (config.NODE_ENV === "production" && usesDevelopmentKey(parseMasterKeys(config.APP_ENCRYPTION_KEYS))) {
    throw new Error("Invalid configuration:\n  APP_ENCRYPTION_KEYS: must be set in production");
  }
  return config;
}

/**
 * What the migration CLI needs, without the web/worker settings: migrating must not
 * fail because, say, SESSION_SECRET is unset on the machine that runs it.
 */
export function loadMigrateConfig(): { databaseUrl: string; debug: boolean } {
  const parsed = schema.pick({ DATABASE_URL: true }).safeParse(process.env);
  if (!parsed.success) {
    console.error(`Invalid configuration:\n  DATABASE_URL: ${parsed.error.issues[0]?.message}`);
    process.exit(2);
  }
  return { databaseUrl: parsed.data.DATABASE_URL, debug: Boolean(process.env.MIGRATE_DEBUG) };
}

export function loadConfig(): Config {
  try {
    return parseConfig(process.env);
  } catch (err) {
    console.error((err as Error).message);
    process.exit(1);
  }
}
