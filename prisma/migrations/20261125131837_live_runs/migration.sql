-- AlterTable
ALTER TABLE "comments" ADD COLUMN     "run_id" TEXT;

-- AlterTable
ALTER TABLE "subagent_task_run_steps" ADD COLUMN     "model_text" TEXT;

-- AlterTable
ALTER TABLE "subagent_task_runs" ADD COLUMN     "thread_id" TEXT;

-- CreateIndex
CREATE INDEX "subagent_task_runs_thread_id_status_idx" ON "subagent_task_runs"("thread_id", "status");

-- AddForeignKey
ALTER TABLE "comments" ADD CONSTRAINT "comments_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "subagent_task_runs"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Live views (server-sent events, src/services/live/): every recorded step, every run queued
-- or changing status (or asked to stop) and every comment NOTIFYs `cadre_live` when its
-- transaction commits, whichever statement wrote it, so no write path can forget to. A
-- notification says only what changed: listeners read the rows themselves (Postgres stays
-- the source of truth). Payloads: `step <run> <agent> <number>`,
-- `run <run> <agent> <thread or -> <status>[ stopping]`, `comment <thread> <comment>`,
-- `pending <pending action> <agent> <status>`.
CREATE FUNCTION cadre_live_step() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('cadre_live', 'step ' || NEW.run_id || ' '
    || (SELECT agent_id FROM subagent_task_runs WHERE id = NEW.run_id) || ' ' || NEW.number);
  RETURN NULL;
END $$;

CREATE FUNCTION cadre_live_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('cadre_live', 'run ' || NEW.id || ' ' || NEW.agent_id || ' '
    || COALESCE(NEW.thread_id, '-') || ' ' || NEW.status
    || CASE WHEN NEW.stop_requested_at IS NOT NULL AND NEW.status = 'running' THEN ' stopping' ELSE '' END);
  RETURN NULL;
END $$;

CREATE FUNCTION cadre_live_comment() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('cadre_live', 'comment ' || NEW.subject_id || ' ' || NEW.id);
  RETURN NULL;
END $$;

CREATE FUNCTION cadre_live_pending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('cadre_live', 'pending ' || NEW.id || ' ' || NEW.agent_id || ' ' || NEW.status);
  RETURN NULL;
END $$;

CREATE TRIGGER subagent_task_run_steps_live AFTER INSERT ON subagent_task_run_steps
  FOR EACH ROW EXECUTE FUNCTION cadre_live_step();

CREATE TRIGGER subagent_task_runs_live_insert AFTER INSERT ON subagent_task_runs
  FOR EACH ROW EXECUTE FUNCTION cadre_live_run();

-- Only a change of status or a stop request: not the lease renewals and token totals that
-- update a running run every second.
CREATE TRIGGER subagent_task_runs_live_update AFTER UPDATE OF status, stop_requested_at ON subagent_task_runs
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.stop_requested_at IS DISTINCT FROM NEW.stop_requested_at)
  EXECUTE FUNCTION cadre_live_run();

CREATE TRIGGER comments_live AFTER INSERT ON comments
  FOR EACH ROW EXECUTE FUNCTION cadre_live_comment();

CREATE TRIGGER agent_pending_actions_live AFTER UPDATE OF status ON agent_pending_actions
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION cadre_live_pending();
