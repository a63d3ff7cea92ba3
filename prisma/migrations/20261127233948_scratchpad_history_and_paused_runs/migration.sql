-- AlterEnum
ALTER TYPE "RunStatus" ADD VALUE 'paused';

-- AlterTable
ALTER TABLE "subagent_task_runs" ADD COLUMN     "pause_requested_at" TIMESTAMP(3),
ADD COLUMN     "paused_by_id" TEXT;

-- CreateTable
CREATE TABLE "scratchpad_entries" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "run_id" TEXT,
    "step_number" INTEGER,
    "author_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "text" TEXT NOT NULL,
    "label" JSONB NOT NULL DEFAULT '[]',
    "created_at" TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "scratchpad_entries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "scratchpad_entries_agent_id_created_at_idx" ON "scratchpad_entries"("agent_id", "created_at");

-- CreateIndex
CREATE INDEX "scratchpad_entries_run_id_idx" ON "scratchpad_entries"("run_id");

-- AddForeignKey
ALTER TABLE "scratchpad_entries" ADD CONSTRAINT "scratchpad_entries_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "scratchpad_entries" ADD CONSTRAINT "scratchpad_entries_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "subagent_task_runs"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Live views: a pause request tells the run page too (`run … running pausing`), as a stop request does.
CREATE OR REPLACE FUNCTION cadre_live_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('cadre_live', 'run ' || NEW.id || ' ' || NEW.agent_id || ' '
    || COALESCE(NEW.thread_id, '-') || ' ' || NEW.status
    || CASE WHEN NEW.stop_requested_at IS NOT NULL AND NEW.status = 'running' THEN ' stopping'
            WHEN NEW.pause_requested_at IS NOT NULL AND NEW.status = 'running' THEN ' pausing' ELSE '' END);
  RETURN NULL;
END $$;

DROP TRIGGER subagent_task_runs_live_update ON subagent_task_runs;
CREATE TRIGGER subagent_task_runs_live_update AFTER UPDATE OF status, stop_requested_at, pause_requested_at ON subagent_task_runs
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.stop_requested_at IS DISTINCT FROM NEW.stop_requested_at
    OR OLD.pause_requested_at IS DISTINCT FROM NEW.pause_requested_at)
  EXECUTE FUNCTION cadre_live_run();
