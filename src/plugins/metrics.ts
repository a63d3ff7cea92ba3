// Request metrics for every route, and GET /metrics (src/http/metrics-scrape.ts) when
// METRICS_TOKEN is set; without it the address is a plain 404.
import fp from "fastify-plugin";
import { scrape } from "../http/metrics-scrape.ts";
import { routePattern, UNMATCHED } from "../http/page-target.ts";
import { NotFoundError } from "../lib/errors.ts";
import { httpRequests } from "../metrics/metrics.ts";

export default fp<{ token: string | undefined }>(
  async (app, opts) => {
    app.addHook("onResponse", async (req, reply) => {
      const url = req.routeOptions.url;
      // The registry's pages share one catch-all route: name the page's pattern instead.
      const route = url === undefined ? UNMATCHED : url === "/*" ? routePattern(req.url) : url;
      httpRequests.observe(
        { method: req.method, route, status: String(reply.statusCode) },
        reply.elapsedTime / 1000,
      );
    });

    app.get("/metrics", async (req, reply) => {
      if (!opts.token) throw new NotFoundError("No page at /metrics");
      const s = await scrape(opts.token, req.headers.authorization);
      return reply.code(s.status).headers(s.headers).send(s.body);
    });
  },
  { name: "metrics", dependencies: ["errors"] },
);
