// The SDK's OAuthClientProvider backed by a connection's sealed columns: the SDK's transport
// asks it for tokens before each request and refreshes them through it after expiry, so a
// call never handles a token itself. Outside the browser's consent step (the connect flow
// passes its own `authorize` and verifier), a server that wants a new sign-in leaves the
// connection `needs_sign_in` instead of redirecting anyone.
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import type { Db } from "../../db/prisma.ts";
import type { ToolConnection } from "../../generated/prisma/client.ts";
import { openSecret, storeSecret } from "./sealed.ts";

export class NeedsSignInError extends Error {
  constructor() {
    super("the server asks for a new sign-in");
  }
}

export interface InteractiveSignIn {
  /** Where the server sends the browser back to (Cadre's callback route). */
  redirectUrl: string;
  state?: string;
  /** Sends the person's browser to the server's authorize URL (the connect flow records it). */
  authorize(url: URL): void | Promise<void>;
  saveCodeVerifier(verifier: string): void | Promise<void>;
  codeVerifier(): string | Promise<string>;
}

export function sealedOAuthProvider(
  db: Db,
  connection: ToolConnection,
  signIn?: InteractiveSignIn,
): OAuthClientProvider {
  return {
    // Outside a sign-in, still the callback registered: the SDK takes a provider without one
    // for a non-interactive (client-credentials) client and never refreshes its tokens.
    get redirectUrl() {
      if (signIn) return signIn.redirectUrl;
      const raw = openSecret(connection, "client");
      return raw ? (JSON.parse(raw) as { redirect_uris?: string[] }).redirect_uris?.[0] : undefined;
    },
    get clientMetadata(): OAuthClientMetadata {
      return {
        client_name: "Cadre",
        redirect_uris: signIn ? [signIn.redirectUrl] : [],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      };
    },
    state: signIn?.state ? () => signIn.state! : undefined,
    clientInformation() {
      const raw = openSecret(connection, "client");
      return raw ? (JSON.parse(raw) as OAuthClientInformationMixed) : undefined;
    },
    async saveClientInformation(info) {
      await storeSecret(db, connection, "client", JSON.stringify(info));
    },
    tokens() {
      const raw = openSecret(connection, "token");
      return raw ? (JSON.parse(raw) as OAuthTokens) : undefined;
    },
    async saveTokens(tokens) {
      await storeSecret(db, connection, "token", JSON.stringify(tokens));
      const expiresAt = tokens.expires_in ? new Date(Date.now() + tokens.expires_in * 1000) : null;
      await db.toolConnection.update({
        where: { id: connection.id, tenantId: connection.tenantId },
        data: { tokenExpiresAt: expiresAt },
      });
      connection.tokenExpiresAt = expiresAt;
    },
    async redirectToAuthorization(url) {
      if (!signIn) throw new NeedsSignInError();
      await signIn.authorize(url);
    },
    async saveCodeVerifier(verifier) {
      if (!signIn) throw new NeedsSignInError();
      await signIn.saveCodeVerifier(verifier);
    },
    async codeVerifier() {
      if (!signIn) throw new NeedsSignInError();
      return signIn.codeVerifier();
    },
    async invalidateCredentials(scope) {
      if (scope === "all" || scope === "tokens") await storeSecret(db, connection, "token", null);
      if (scope === "all" || scope === "client") await storeSecret(db, connection, "client", null);
    },
  };
}
