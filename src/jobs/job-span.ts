// A job's span, when tracing is on: a child of the span that wrote the job's event (its
// `traceparent`), so the request's trace shows what its event set off. (What the job queues
// links to that request through the event row: the worker keeps no active context.)
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { Job } from "bullmq";
import { contextFrom, tracer, tracingOn } from "../lib/telemetry.ts";

export async function inJobSpan<T>(
  job: Job<{ traceparent?: string }>,
  queue: string,
  callback: () => Promise<T>,
): Promise<T> {
  if (!tracingOn()) return callback();
  return tracer().startActiveSpan(
    `process ${queue}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        "messaging.system": "bullmq",
        "messaging.operation.type": "process",
        "messaging.destination.name": queue,
        ...(job.id && { "messaging.message.id": job.id }),
      },
    },
    contextFrom(job.data.traceparent),
    async (span) => {
      try {
        return await callback();
      } catch (err) {
        // The kind of error, not its message: a message may quote what a job read.
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute("error.type", (err as Error)?.name ?? "Error");
        throw err;
      } finally {
        span.end();
      }
    },
  );
}
