// A server span per request when tracing is on (lib/telemetry.ts), continuing the caller's
// `traceparent` header, and active while the request is handled: the events and runs it
// writes carry it, so a run's trace links back to the request that queued it. Named by the
// route's pattern, never the raw path or query (an address may carry a token).
import { context, type Span, SpanKind, trace } from "@opentelemetry/api";
import type { FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { routePattern, UNMATCHED } from "../http/page-target.ts";
import { contextFrom, tracer, tracingOn } from "../lib/telemetry.ts";

const spans = new WeakMap<FastifyRequest, Span>();

export default fp(
  async (app) => {
    if (!tracingOn()) return;
    app.addHook("onRequest", (req, _reply, done) => {
      const header = req.headers.traceparent;
      const span = tracer().startSpan(
        req.method,
        { kind: SpanKind.SERVER, attributes: { "http.request.method": req.method } },
        contextFrom(typeof header === "string" ? header : undefined),
      );
      spans.set(req, span);
      // The rest of the request runs inside the span's context (AsyncLocalStorage follows it).
      context.with(trace.setSpan(context.active(), span), done);
    });
    app.addHook("onResponse", async (req, reply) => {
      const span = spans.get(req);
      if (!span) return;
      const url = req.routeOptions.url;
      const route = url === undefined ? UNMATCHED : url === "/*" ? routePattern(req.url) : url;
      span.updateName(`${req.method} ${route}`);
      span.setAttributes({
        "http.route": route,
        "http.response.status_code": reply.statusCode,
        ...(req.tenant && { "cadre.tenant.id": req.tenant.id }),
      });
      span.end();
    });
  },
  { name: "tracing" },
);
