-- CreateIndex
CREATE INDEX "subagent_task_runs_running_idx" ON "subagent_task_runs"("agent_id", "lease_expires_at") WHERE (status = 'running');
