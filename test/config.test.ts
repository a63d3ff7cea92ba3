// Configuration: the database pool's size (Prisma's rule by default), the login throttle, the
// rate limits, audit trail and metrics; the operator's numbers when given, a clear error for a bad one.
import { availableParallelism } from "node:os";
import { getHeapStatistics } from "node:v8";
import { describe, expect, it } from "vitest";
import { parseConfig, tracingOptions, workerConcurrency } from "../src/config.ts";

describe("DATABASE_POOL_SIZE", () => {
  it("defaults to two connections per core plus one", () => {
    expect(parseConfig({}).DATABASE_POOL_SIZE).toBe(2 * availableParallelism() + 1);
  });

  it("takes the operator's number, and names the variable when it is not one", () => {
    expect(parseConfig({ DATABASE_POOL_SIZE: "12" }).DATABASE_POOL_SIZE).toBe(12);
    expect(() => parseConfig({ DATABASE_POOL_SIZE: "0" })).toThrow(/DATABASE_POOL_SIZE/);
  });
});

describe("login throttle and TRUST_PROXY", () => {
  it("defaults to 10 per account, 30 per address in 15 minutes, trusting only local proxies", () => {
    const c = parseConfig({});
    expect(c.LOGIN_ACCOUNT_MAX_FAILURES).toBe(10);
    expect(c.LOGIN_ADDRESS_MAX_FAILURES).toBe(30);
    expect(c.LOGIN_WINDOW_SECONDS).toBe(900);
    expect(c.TRUST_PROXY).toBe("loopback,linklocal,uniquelocal");
  });

  it("reads true, false and a list of proxies, and names a bad number", () => {
    expect(parseConfig({ TRUST_PROXY: "true" }).TRUST_PROXY).toBe(true);
    expect(parseConfig({ TRUST_PROXY: "false" }).TRUST_PROXY).toBe(false);
    expect(parseConfig({ TRUST_PROXY: "10.0.0.5,10.0.0.6" }).TRUST_PROXY).toBe("10.0.0.5,10.0.0.6");
    expect(() => parseConfig({ LOGIN_WINDOW_SECONDS: "0" })).toThrow(/LOGIN_WINDOW_SECONDS/);
  });
});

describe("rate limits, audit trail and metrics", () => {
  it("defaults: 600 calls a token and 3000 a workspace per minute, 30 days of audit, no /metrics", () => {
    const c = parseConfig({});
    expect([
      c.API_RATE_LIMIT_PER_TOKEN,
      c.API_RATE_LIMIT_PER_TENANT,
      c.API_RATE_LIMIT_WINDOW_SECONDS,
    ]).toEqual([600, 3000, 60]);
    expect([c.AUDIT_RETENTION_DAYS, c.AUDIT_FLUSH_MS, c.AUDIT_BATCH_SIZE]).toEqual([30, 1000, 500]);
    expect([c.METRICS_TOKEN, c.METRICS_PORT, c.METRICS_HOST]).toEqual([undefined, undefined, "127.0.0.1"]);
  });

  it("a worker metrics port needs the token scrapes send; a short token or a bad number is named", () => {
    expect(() => parseConfig({ METRICS_PORT: "9464" })).toThrow(/METRICS_PORT: needs METRICS_TOKEN/);
    expect(parseConfig({ METRICS_PORT: "9464", METRICS_TOKEN: "x".repeat(16) }).METRICS_PORT).toBe(9464);
    expect(() => parseConfig({ METRICS_TOKEN: "short" })).toThrow(/METRICS_TOKEN: at least 16 characters/);
    expect(() => parseConfig({ API_RATE_LIMIT_PER_TOKEN: "-1" })).toThrow(/API_RATE_LIMIT_PER_TOKEN/);
    expect(() => parseConfig({ AUDIT_RETENTION_DAYS: "0" })).toThrow(/AUDIT_RETENTION_DAYS/);
  });
});

describe("WORKER_CONCURRENCY and LLM_MAX_CONNECTIONS", () => {
  it("a worker holds 1,000 runs by default, fewer when its heap could not hold them", () => {
    expect(parseConfig({}).WORKER_CONCURRENCY).toBe(workerConcurrency(getHeapStatistics().heap_size_limit));
    expect(workerConcurrency(4096 * 2 ** 20)).toBe(1000);
    expect(workerConcurrency(256 * 2 ** 20)).toBe(512);
    expect(workerConcurrency(64 * 2 ** 20)).toBe(10);
  });

  it("takes the operator's numbers; the LLM's connections are unlimited unless set", () => {
    expect(parseConfig({ WORKER_CONCURRENCY: "4" }).WORKER_CONCURRENCY).toBe(4);
    expect(parseConfig({ WORKER_CONCURRENCY: "5000" }).WORKER_CONCURRENCY).toBe(5000);
    expect(() => parseConfig({ WORKER_CONCURRENCY: "0" })).toThrow(/WORKER_CONCURRENCY/);
    expect(parseConfig({}).LLM_MAX_CONNECTIONS).toBeUndefined();
    expect(parseConfig({ LLM_MAX_CONNECTIONS: "8" }).LLM_MAX_CONNECTIONS).toBe(8);
    expect(() => parseConfig({ LLM_MAX_CONNECTIONS: "0" })).toThrow(/LLM_MAX_CONNECTIONS/);
  });
});

describe("OpenTelemetry variables", () => {
  it("off without an endpoint; headers read as key=value pairs, URL-decoded; a malformed list names the variable", async () => {
    const off = parseConfig({});
    expect(off.OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    expect(off.OTEL_SERVICE_NAME).toBe("cadre");
    expect(off.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT).toBe(false);
    const { startTracing, tracingOn } = await import("../src/lib/telemetry.ts");
    expect(await startTracing(tracingOptions(off))).toBe(false);
    expect(tracingOn()).toBe(false);
    const on = parseConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc, x-team = ops",
      OTEL_SERVICE_NAME: "cadre-worker",
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
    });
    expect(tracingOptions(on)).toEqual({
      endpoint: "http://collector:4318",
      headers: { authorization: "Bearer abc", "x-team": "ops" },
      serviceName: "cadre-worker",
      captureContent: true,
    });
    expect(() => parseConfig({ OTEL_EXPORTER_OTLP_HEADERS: "no-equals-sign" })).toThrow(
      /OTEL_EXPORTER_OTLP_HEADERS: expected key=value pairs/,
    );
    expect(() => parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector" })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
  });
});
