// OAuth 2.1 sign-in to a connection's server, as the MCP spec describes it, through the SDK's
// own client auth (`auth()`): the server's 401 names its protected-resource metadata, which
// names the authorization server; the SDK reads that server's metadata, registers Cadre as a
// client (dynamic registration), and builds the authorization URL with PKCE and the resource
// indicator. The person's browser goes there; the server sends it back to Cadre's callback,
// which finishes the code exchange here. Every address on the way is refused when private.
import { randomBytes } from "node:crypto";
import { auth, extractResourceMetadataUrl } from "@modelcontextprotocol/sdk/client/auth.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Db } from "../../db/prisma.ts";
import type { ToolConnection } from "../../generated/prisma/client.ts";
import { checkResolvedUrl } from "../money/keys.ts";
import { ToolConnectionError } from "./client.ts";
import { sealedOAuthProvider } from "./oauth-provider.ts";
import { openSecret, sealedColumns } from "./sealed.ts";

/** Where every server sends a person back to, on the workspace's own host. */
export const CALLBACK_PATH = "/oauth/tools/callback";

/** fetch, refusing private addresses (the authorization server is named by the tool's server: it may point anywhere). */
export const guardedFetch: FetchLike = async (url, init) => {
  const refused = await checkResolvedUrl(String(url));
  if (refused) throw new ToolConnectionError("unreachable", refused);
  return fetch(url, { ...init, signal: init?.signal ?? AbortSignal.timeout(15_000) });
};

/** The protected-resource metadata URL the server's 401 names (RFC 9728), when it names one. */
export async function resourceMetadataUrl(serverUrl: string): Promise<URL | undefined> {
  const response = await guardedFetch(serverUrl, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "cadre", version: "1.0.0" },
      },
    }),
  });
  await response.body?.cancel();
  return response.status === 401 ? extractResourceMetadataUrl(response) : undefined;
}

const provider = (
  db: Db,
  connection: ToolConnection,
  origin: string,
  state?: string,
  onAuthorize?: (url: URL) => void,
) =>
  sealedOAuthProvider(db, connection, {
    redirectUrl: `${origin}${CALLBACK_PATH}`,
    state,
    authorize: (url) => onAuthorize?.(url),
    async saveCodeVerifier(verifier) {
      const columns = sealedColumns(connection.tenantId, connection.id, "verifier", verifier);
      await db.toolConnection.update({ where: { id: connection.id }, data: columns });
      Object.assign(connection, columns);
    },
    codeVerifier() {
      const verifier = openSecret(connection, "verifier");
      if (!verifier) throw new ToolConnectionError("needs_sign_in", "no sign-in is under way");
      return verifier;
    },
  });

/**
 * Starts a sign-in: the authorization URL to send the person's browser to, kept on the row
 * with its state until the callback comes. Null when the stored sign-in still works (refreshed).
 */
export async function startSignIn(db: Db, connection: ToolConnection, origin: string): Promise<URL | null> {
  const state = randomBytes(24).toString("base64url");
  let authorizationUrl: URL | undefined;
  const result = await auth(
    provider(db, connection, origin, state, (url) => {
      authorizationUrl = url;
    }),
    {
      serverUrl: connection.url,
      resourceMetadataUrl: await resourceMetadataUrl(connection.url),
      fetchFn: guardedFetch,
    },
  );
  if (result === "AUTHORIZED" || !authorizationUrl) return null;
  // The address comes from the server's metadata: only a web page is a place to send a person.
  if (authorizationUrl.protocol !== "https:" && authorizationUrl.protocol !== "http:")
    throw new ToolConnectionError("needs_sign_in", "the server's authorization address is not a web page");
  await db.toolConnection.update({
    where: { id: connection.id },
    data: { signInState: state, signInUrl: authorizationUrl.href },
  });
  return authorizationUrl;
}

/** The connection a callback's state names, in this workspace, while its sign-in is under way. */
export function signInFor(db: Db, tenantId: string, state: string) {
  return db.toolConnection.findFirst({ where: { tenantId, signInState: state, disconnectedAt: null } });
}

/** Exchanges the code the server sent back (with the PKCE verifier), stores the tokens sealed, and ends the sign-in. */
export async function finishSignIn(db: Db, connection: ToolConnection, code: string, origin: string) {
  try {
    await auth(provider(db, connection, origin), {
      serverUrl: connection.url,
      authorizationCode: code,
      resourceMetadataUrl: await resourceMetadataUrl(connection.url),
      fetchFn: guardedFetch,
    });
  } finally {
    // One code, one try: a failed exchange starts over from the connection's page.
    const cleared = {
      signInState: null,
      signInUrl: null,
      ...sealedColumns(connection.tenantId, connection.id, "verifier", null),
    };
    await db.toolConnection.update({ where: { id: connection.id }, data: cleared });
    Object.assign(connection, cleared);
  }
}
