// Ending a connection: an OAuth token is revoked at its authorization server when that server
// offers revocation (RFC 7009), then the row goes, and with it every sealed secret and pinned
// tool. The record of past calls outlives it (tool calls name the connection, not a key to it).
import { discoverOAuthServerInfo } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { Db } from "../../db/prisma.ts";
import type { ToolConnection } from "../../generated/prisma/client.ts";
import { openSecret } from "./sealed.ts";
import { guardedFetch, resourceMetadataUrl } from "./sign-in.ts";

export type Revocation = "revoked" | "not_revoked" | "none";

export async function disconnectConnection(db: Db, connection: ToolConnection): Promise<Revocation> {
  const revocation = connection.authKind === "oauth" ? await revoke(connection) : "none";
  await db.toolConnection.delete({ where: { id: connection.id, tenantId: connection.tenantId } });
  return revocation;
}

/** Revokes the refresh token (which ends the access token with it at most servers), then the access token. */
async function revoke(connection: ToolConnection): Promise<Revocation> {
  const rawTokens = openSecret(connection, "token");
  const rawClient = openSecret(connection, "client");
  if (!rawTokens || !rawClient) return "none";
  const tokens = JSON.parse(rawTokens) as OAuthTokens;
  const client = JSON.parse(rawClient) as OAuthClientInformationMixed;
  try {
    const info = await discoverOAuthServerInfo(connection.url, {
      resourceMetadataUrl: await resourceMetadataUrl(connection.url),
      fetchFn: guardedFetch,
    });
    // OAuth metadata names it (RFC 8414); OpenID Connect discovery's type does not, though servers send it.
    const metadata = info.authorizationServerMetadata as { revocation_endpoint?: string } | undefined;
    const endpoint = metadata?.revocation_endpoint;
    if (!endpoint) return "not_revoked";
    const revoked = [];
    for (const [token, hint] of [
      [tokens.refresh_token, "refresh_token"],
      [tokens.access_token, "access_token"],
    ] as const) {
      if (!token) continue;
      const body = new URLSearchParams({ token, token_type_hint: hint, client_id: client.client_id });
      const headers: Record<string, string> = { "Content-Type": "application/x-www-form-urlencoded" };
      if (client.client_secret) body.set("client_secret", client.client_secret);
      const response = await guardedFetch(endpoint, { method: "POST", headers, body });
      revoked.push(response.ok);
    }
    return revoked.length && revoked.every(Boolean) ? "revoked" : "not_revoked";
  } catch {
    return "not_revoked";
  }
}
