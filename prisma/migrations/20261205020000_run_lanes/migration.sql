-- Lanes (runs.ts claimNext): an agent runs one run at a time per lane, not per agent. '' is the
-- agent's own lane, every run's until now, so its real work keeps its memory and its order; an
-- experiment queues its dry runs in lanes of its own (`experiment:<id>:<slot>`), so they run
-- beside the agent's and beside each other, as many at once as it has slots.
-- A constant default: no table rewrite, and every existing run is in the agent's own lane.
-- The partial index of running runs stays as it is: an agent has a handful of running runs
-- (one per busy lane), and the claim filters those few by lane.
ALTER TABLE "subagent_task_runs" ADD COLUMN "lane" TEXT NOT NULL DEFAULT '';
