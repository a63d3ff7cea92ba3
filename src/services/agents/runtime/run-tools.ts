// The connected tools a run may call, read once when it starts: its typed tools are the same
// bytes from its first step to its last (the prompt cache), each as its connection's owner
// allowed it (policy/tool-grants.ts toolSpecs). A tool changed since stays listed and is
// refused when called, saying why.
import type { Db } from "../../../db/prisma.ts";
import type { RunStart } from "../core/run-start.ts";
import { configUnder, sharedAgentConfig } from "../core/settings.ts";
import { toolSpecs } from "../policy/tool-grants.ts";
import type { ConnectedTool } from "../prompt/protocol.ts";

export function connectedToolsOf(db: Db, start: RunStart): Promise<ConnectedTool[]> {
  const { run, agent } = start;
  // The capabilities the run was queued with, as its actions are (capabilities.ts runActions).
  const cfg = run.policy ? configUnder(agent.agentConfig, run.policy) : sharedAgentConfig(agent.agentConfig);
  return toolSpecs(db, agent, cfg.capabilities);
}
