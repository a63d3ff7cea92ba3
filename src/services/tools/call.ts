// Calling one tool of a connection: what comes back is text for a model and a step's record,
// so it is bounded in size and has credential-shaped strings (and the connection's own
// secrets, whatever their shape) masked before anyone sees it. A failure is a result, not a
// throw: the run records it as the step's outcome.
import type { Db } from "../../db/prisma.ts";
import type { ToolConnection } from "../../generated/prisma/client.ts";
import { maskSecrets, ownSecrets, ToolConnectionError, withClient } from "./client.ts";
import { setStatus } from "./connections.ts";

/** What a call's text is cut to: a page's worth for a model, with the cut said. */
export const MAX_RESULT_CHARS = 20_000;
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface CallResult {
  /** The server answered (a tool's own error is `ok` with `isError`). */
  ok: boolean;
  text: string;
  isError: boolean;
}

export async function callTool(
  db: Db,
  connection: ToolConnection,
  name: string,
  args: Record<string, unknown>,
  options: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<CallResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const secrets = ownSecrets(connection);
  try {
    const result = await withClient(
      db,
      connection,
      { signal: options.signal, timeoutMs },
      (client, request) => client.callTool({ name, arguments: args }, undefined, request),
    );
    const text = resultText(result.content as unknown[], result.structuredContent);
    return { ok: true, text: bounded(maskSecrets(text, secrets)), isError: result.isError === true };
  } catch (err) {
    if (err instanceof ToolConnectionError)
      await setStatus(db, connection, err.status, maskSecrets(err.message, secrets));
    const reason = err instanceof Error ? err.message : String(err);
    return {
      ok: false,
      text: bounded(maskSecrets(`The tool could not be called: ${reason}`, secrets)),
      isError: true,
    };
  }
}

/** Text parts as they are; other parts named, so a model knows something was there. */
function resultText(content: unknown[] | undefined, structured: unknown): string {
  const parts = (content ?? []).map((part) => {
    const item = part as {
      type?: string;
      text?: string;
      resource?: { uri?: string; text?: string };
      uri?: string;
    };
    if (item.type === "text") return item.text ?? "";
    if (item.type === "resource") return item.resource?.text ?? `[resource ${item.resource?.uri ?? ""}]`;
    if (item.type === "resource_link") return `[link ${item.uri ?? ""}]`;
    return `[${item.type ?? "unknown"} content]`;
  });
  if (!parts.length && structured !== undefined) parts.push(JSON.stringify(structured));
  return parts.join("\n");
}

function bounded(text: string): string {
  if (text.length <= MAX_RESULT_CHARS) return text;
  return `${text.slice(0, MAX_RESULT_CHARS)}\n[cut: ${text.length - MAX_RESULT_CHARS} more characters]`;
}
