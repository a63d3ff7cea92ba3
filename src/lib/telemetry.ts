// OpenTelemetry traces, opt-in. Only the API (a few kilobytes, no-op until a provider is
// registered) is imported here; the SDK and its OTLP/HTTP exporter are loaded by
// startTracing, and only when OTEL_EXPORTER_OTLP_ENDPOINT is set: off, nothing is loaded and
// every span helper returns at its first line. Spans are batched in the background and
// exported as OTLP/HTTP JSON; a collector that is away loses spans (the queue is bounded and
// drops its overflow), never slows or fails what is traced.
import {
  type Context,
  context,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  TraceFlags,
  type Tracer,
  trace,
} from "@opentelemetry/api";

export interface TracingOptions {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL; unset, tracing is off. */
  endpoint?: string;
  /** OTEL_EXPORTER_OTLP_HEADERS, parsed. */
  headers?: Record<string, string>;
  /** OTEL_SERVICE_NAME */
  serviceName: string;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT */
  captureContent?: boolean;
  /** How often the batch is sent (unset: OTEL_BSP_SCHEDULE_DELAY, else the SDK's 5 s). */
  scheduledDelayMs?: number;
  /**
   * Whether the active span follows async calls (AsyncLocalStorage), so a request's span
   * reaches the events and runs it writes. The web process wants it; the worker does not:
   * on Node 20 it costs a hook on every promise (measured 0.3–0.4 µs each, about 12 % of a
   * worker's CPU per agent step), and the worker passes its spans explicitly instead.
   */
  activeContext?: boolean;
}

let tracing = false;
let capture = false;
let provider: { forceFlush(): Promise<void>; shutdown(): Promise<void> } | null = null;

export const tracingOn = (): boolean => tracing;
/** Whether prompts and replies go into spans (masked as they are for the model). */
export const captureContent = (): boolean => capture;
export const tracer = (): Tracer => trace.getTracer("cadre");

export async function startTracing(tracingOptions: TracingOptions): Promise<boolean> {
  if (!tracingOptions.endpoint || tracing) return tracing;
  const [
    sdk,
    { OTLPTraceExporter },
    { resourceFromAttributes },
    { AsyncLocalStorageContextManager },
    semconv,
  ] = await Promise.all([
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/context-async-hooks"),
    import("@opentelemetry/semantic-conventions"),
  ]);
  const exporter = new OTLPTraceExporter({
    url: `${tracingOptions.endpoint.replace(/\/+$/, "")}/v1/traces`,
    headers: tracingOptions.headers ?? {},
    // An export that hangs holds one batch, not a run: spans behind it wait in the bounded queue.
    timeoutMillis: 5000,
  });
  const basicTracerProvider = new sdk.BasicTracerProvider({
    resource: resourceFromAttributes({ [semconv.ATTR_SERVICE_NAME]: tracingOptions.serviceName }),
    spanProcessors: [
      new sdk.BatchSpanProcessor(exporter, {
        maxQueueSize: 8192,
        maxExportBatchSize: 512,
        // Unset, the SDK reads OTEL_BSP_SCHEDULE_DELAY, else its 5 s.
        scheduledDelayMillis: tracingOptions.scheduledDelayMs,
      }),
    ],
  });
  // Active spans follow async calls (a web request's span reaches the event it writes).
  if (tracingOptions.activeContext !== false)
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(basicTracerProvider);
  provider = basicTracerProvider;
  capture = tracingOptions.captureContent ?? false;
  tracing = true;
  return true;
}

/** Sends what is batched (tests, a graceful close). */
export async function flushTracing(): Promise<void> {
  await provider?.forceFlush();
}

export async function stopTracing(): Promise<void> {
  if (!provider) return;
  await provider.shutdown();
  trace.disable();
  context.disable();
  provider = null;
  tracing = false;
}

// W3C trace context (https://www.w3.org/TR/trace-context/): version 00 only.
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export const traceparentOf = (spanContext: SpanContext): string =>
  `00-${spanContext.traceId}-${spanContext.spanId}-0${spanContext.traceFlags & TraceFlags.SAMPLED}`;

export function spanContextOf(traceparent: string | null | undefined): SpanContext | undefined {
  const match = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!match) return undefined;
  const spanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  };
  return trace.isSpanContextValid(spanContext) ? spanContext : undefined;
}

/** A context whose parent is `traceparent` (a request's header, a job's data); the root context when there is none. */
export function contextFrom(traceparent: string | null | undefined): Context {
  const spanContext = spanContextOf(traceparent);
  return spanContext ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}

/** The active span's traceparent, for what outlives this call (an event row, a job, a run). */
export function activeTraceparent(): string | undefined {
  if (!tracing) return undefined;
  const spanContext = trace.getSpan(context.active())?.spanContext();
  return spanContext && trace.isSpanContextValid(spanContext) ? traceparentOf(spanContext) : undefined;
}

/** Runs `fn` with `span` active, so what it writes (events, runs) carries the span's context. */
export function withSpan<T>(span: Span | undefined, callback: () => T): T {
  return span ? context.with(trace.setSpan(context.active(), span), callback) : callback();
}
