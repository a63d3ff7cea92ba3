// One SDK client per use, over Streamable HTTP: a connection's server is called rarely and
// from any worker, so nothing is kept open between calls. The address is checked at use like
// an outgoing webhook's (checkResolvedUrl), and the auth header or OAuth provider comes from
// the sealed columns here, never from a caller.
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Db } from "../../db/prisma.ts";
import type { ToolConnection } from "../../generated/prisma/client.ts";
import { maskText, placeholder } from "../agents/core/secret-masking.ts";
import { checkResolvedUrl } from "../money/keys.ts";
import { hostRefusal } from "./hosts.ts";
import { NeedsSignInError, sealedOAuthProvider } from "./oauth-provider.ts";
import { openSecret } from "./sealed.ts";

const CLIENT_INFO = { name: "cadre", version: "1.0.0" };

/** Why a connection could not be used, as its page says it. */
export class ToolConnectionError extends Error {
  constructor(
    readonly status: "needs_sign_in" | "unreachable",
    message: string,
  ) {
    super(message);
  }
}

export interface UseOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** Opens a client on the connection's server, runs `use`, and closes it whatever happens. */
export async function withClient<T>(
  db: Db,
  connection: ToolConnection,
  options: UseOptions,
  use: (client: Client, request: { signal?: AbortSignal; timeout?: number }) => Promise<T>,
): Promise<T> {
  const refused =
    (await checkResolvedUrl(connection.url)) ?? (await hostRefusal(db, connection.tenantId, connection.url));
  if (refused) throw new ToolConnectionError("unreachable", refused);
  const transport = new StreamableHTTPClientTransport(
    new URL(connection.url),
    transportOptions(db, connection),
  );
  const client = new Client(CLIENT_INFO);
  const request = { signal: options.signal, timeout: options.timeoutMs };
  try {
    await client.connect(transport, request);
    return await use(client, request);
  } catch (err) {
    throw classify(err);
  } finally {
    await client.close().catch(() => {});
  }
}

function transportOptions(db: Db, connection: ToolConnection) {
  if (connection.authKind === "oauth") return { authProvider: sealedOAuthProvider(db, connection) };
  if (connection.authKind === "bearer") {
    const token = openSecret(connection, "token");
    if (!token) return {};
    return { requestInit: { headers: { Authorization: `Bearer ${token}` } } };
  }
  return {};
}

/** The connection's own secrets, to mask in whatever its server sends back. */
export function ownSecrets(connection: ToolConnection): string[] {
  const raw = openSecret(connection, "token");
  const client = openSecret(connection, "client");
  const secrets: (string | undefined)[] = [];
  if (raw && connection.authKind !== "oauth") secrets.push(raw);
  if (raw && connection.authKind === "oauth") {
    const tokens = JSON.parse(raw) as { access_token?: string; refresh_token?: string };
    secrets.push(tokens.access_token, tokens.refresh_token);
  }
  if (client) secrets.push((JSON.parse(client) as { client_secret?: string }).client_secret);
  return secrets.filter((s): s is string => !!s);
}

/**
 * Text from a server (a tool's result, an error it answered with) as Cadre keeps or shows
 * it: the connection's own secrets and any the masking rules know replaced.
 */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets)
    if (secret.length >= 4) out = out.split(secret).join(placeholder("tool connection secret"));
  return maskText(out);
}

function classify(err: unknown): Error {
  if (err instanceof ToolConnectionError) return err;
  if (err instanceof NeedsSignInError || err instanceof UnauthorizedError)
    return new ToolConnectionError("needs_sign_in", "the server asks to sign in again");
  if (err instanceof StreamableHTTPError && (err.code === 401 || err.code === 403))
    return new ToolConnectionError("needs_sign_in", `the server refused the credentials (HTTP ${err.code})`);
  if (err instanceof Error && err.name === "AbortError") return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ToolConnectionError("unreachable", message.slice(0, 300));
}
