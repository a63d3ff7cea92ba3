// What the worker says on the live channel itself. Steps, runs and comments need nothing
// here: triggers NOTIFY when they commit. An LLM call starting writes nothing, so a run
// says it: the run page shows "thinking…" while the call is out.
import { grouped } from "../../db/group-commit.ts";
import { type Db, hotQuery } from "../../db/prisma.ts";
import { Prisma } from "../../generated/prisma/client.ts";
import { LIVE_CHANNEL } from "../events-channel.ts";

interface Call {
  runId: string;
  step: number;
  at: number;
}

// Hundreds of runs starting calls at once say so in a few statements, not hundreds.
const announce = grouped<Call, void>({
  async write(db: Db, calls: Call[]) {
    const payloads = calls.map((c) => `call ${c.runId} ${c.step} ${c.at}`);
    await hotQuery(db, Prisma.sql`SELECT pg_notify(${LIVE_CHANNEL}, p) FROM unnest(${payloads}::text[]) p`);
    return calls.map(() => undefined);
  },
  key: (call) => call.runId,
});

/** Announces that the call for step `step` of the run started now. Never awaited, never fails the run: a missed "thinking…" costs nothing. */
export function callStarted(db: Db, run: { id: string }, step: number): void {
  announce(db, { runId: run.id, step, at: Date.now() }).catch(() => undefined);
}
