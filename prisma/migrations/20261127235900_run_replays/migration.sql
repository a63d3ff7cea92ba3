-- AlterTable
ALTER TABLE "subagent_task_run_steps" ADD COLUMN     "replayed" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "subagent_task_runs" ADD COLUMN     "replay_from_step" INTEGER,
ADD COLUMN     "replay_of_run_id" TEXT;

-- CreateIndex
CREATE INDEX "subagent_task_runs_replay_of_run_id_idx" ON "subagent_task_runs"("replay_of_run_id");

-- AddForeignKey
ALTER TABLE "subagent_task_runs" ADD CONSTRAINT "subagent_task_runs_replay_of_run_id_fkey" FOREIGN KEY ("replay_of_run_id") REFERENCES "subagent_task_runs"("id") ON DELETE SET NULL ON UPDATE CASCADE;
