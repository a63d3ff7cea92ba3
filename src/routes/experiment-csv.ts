// An experiment's results as CSV (pages/experiment-views.ts resultRows): one row per case and
// expectation with each side's pass or fail and why, then one per case with its two dry runs.
// For the agent's managers only, as the experiment's page is (loadAgent, loadExperiment).
import type { FastifyInstance } from "fastify";
import { experimentResults } from "../services/agents/core/experiments.ts";
import { loadAgent } from "../services/agents/core/ownership.ts";
import { loadExperiment } from "../services/pages/agent-experiments.ts";
import { resultRows } from "../services/pages/experiment-views.ts";
import { ctxOf } from "./page-context.ts";
import { csvCell } from "./usage-csv.ts";

export default async function experimentCsvRoutes(app: FastifyInstance) {
  app.get<{ Params: { handle: string; experiment: string } }>(
    "/subagents/:handle/experiments/:experiment/results.csv",
    async (req, reply) => {
      const ctx = ctxOf(req);
      const agent = await loadAgent(ctx, req.params.handle);
      const experiment = await loadExperiment(ctx, agent, req.params.experiment);
      const rows = resultRows(await experimentResults(ctx.db, experiment));
      const body = rows
        .map((row) => row.map(csvCell).join(","))
        .join("\n")
        .concat("\n");
      return reply
        .type("text/csv; charset=utf-8")
        .header(
          "content-disposition",
          `attachment; filename="${agent.handle}-experiment-${experiment.id}.csv"`,
        )
        .send(body);
    },
  );
}
