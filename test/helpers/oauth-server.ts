// An OAuth 2.1 authorization server in the test process, built from the MCP SDK's own router
// (mcpAuthRouter: metadata, dynamic client registration, authorize with PKCE, token with
// refresh, revocation, and the protected-resource metadata of the MCP server it guards). Its
// authorize step is a consent page a person clicks in Chromium. Tokens live in memory; a test
// can expire every access token at once (no timers) and read what was registered, asked,
// refreshed and revoked.
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import type { OAuthRegisteredClientsStore } from "@modelcontextprotocol/sdk/server/auth/clients.js";
import type {
  AuthorizationParams,
  OAuthServerProvider,
} from "@modelcontextprotocol/sdk/server/auth/provider.js";
import { mcpAuthRouter } from "@modelcontextprotocol/sdk/server/auth/router.js";
import type { OAuthClientInformationFull, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import express from "express";

export interface TestAuthServer {
  url: string;
  /** The WWW-Authenticate challenge the guarded MCP server (at `/mcp`) answers a 401 with. */
  challenge: string;
  /** Mount the router once the MCP server's URL is known (it names its resource). */
  guard(mcpUrl: string): void;
  verify(token: string): boolean;
  /** Every access token issued so far stops working, as if it had expired. */
  expireAccessTokens(): void;
  clients: Map<string, OAuthClientInformationFull>;
  /** What each authorize asked for: the PKCE challenge and the resource indicator. */
  asked: { codeChallenge: string; resource?: string; redirectUri: string }[];
  refreshes: number;
  revoked: string[];
  /** Every access and refresh token issued, for the leak test to look for. */
  issued: string[];
  close(): Promise<void>;
}

export async function startAuthServer(): Promise<TestAuthServer> {
  const clients = new Map<string, OAuthClientInformationFull>();
  const pending = new Map<string, { client: OAuthClientInformationFull; params: AuthorizationParams }>();
  const codes = new Map<string, { client: OAuthClientInformationFull; params: AuthorizationParams }>();
  const access = new Map<string, { clientId: string; live: boolean }>();
  const refresh = new Map<string, { clientId: string; resource?: URL }>();
  const state = {
    refreshes: 0,
    revoked: [] as string[],
    issued: [] as string[],
    asked: [] as TestAuthServer["asked"],
  };
  let resource = "";

  const issue = (clientId: string, resourceUrl?: URL): OAuthTokens => {
    const accessToken = `at-${randomUUID()}`;
    const refreshToken = `rt-${randomUUID()}`;
    access.set(accessToken, { clientId, live: true });
    refresh.set(refreshToken, { clientId, resource: resourceUrl });
    state.issued.push(accessToken, refreshToken);
    return { access_token: accessToken, token_type: "bearer", expires_in: 3600, refresh_token: refreshToken };
  };

  const clientsStore: OAuthRegisteredClientsStore = {
    getClient: async (id) => clients.get(id),
    registerClient: async (client) => {
      const full = client as OAuthClientInformationFull;
      clients.set(full.client_id, full);
      return full;
    },
  };
  const provider: OAuthServerProvider = {
    clientsStore,
    async authorize(client, params, res) {
      const id = randomUUID();
      pending.set(id, { client, params });
      state.asked.push({
        codeChallenge: params.codeChallenge,
        resource: params.resource?.href,
        redirectUri: params.redirectUri,
      });
      res.setHeader("content-type", "text/html; charset=utf-8");
      res.end(
        `<!doctype html><title>Allow access</title><h1>Allow ${client.client_name ?? "this app"} to use your tools?</h1><form method="post" action="/consent"><input type="hidden" name="id" value="${id}"><button>Allow</button></form>`,
      );
    },
    async challengeForAuthorizationCode(_client, code) {
      const entry = codes.get(code);
      if (!entry) throw new Error("unknown code");
      return entry.params.codeChallenge;
    },
    async exchangeAuthorizationCode(client, code) {
      const entry = codes.get(code);
      if (!entry || entry.client.client_id !== client.client_id) throw new Error("unknown code");
      if (entry.params.resource?.href !== resource)
        throw new Error(`wrong resource ${entry.params.resource}`);
      codes.delete(code);
      return issue(client.client_id, entry.params.resource);
    },
    async exchangeRefreshToken(client, token) {
      const entry = refresh.get(token);
      if (!entry || entry.clientId !== client.client_id) throw new Error("unknown refresh token");
      refresh.delete(token);
      state.refreshes++;
      return issue(client.client_id, entry.resource);
    },
    async verifyAccessToken(token) {
      const entry = access.get(token);
      if (!entry?.live) throw new Error("invalid token");
      return { token, clientId: entry.clientId, scopes: [] };
    },
    async revokeToken(_client, request) {
      state.revoked.push(request.token);
      access.delete(request.token);
      refresh.delete(request.token);
    },
  };

  const app = express();
  app.use(express.urlencoded({ extended: false }));
  app.post("/consent", (req, res) => {
    const entry = pending.get(req.body.id ?? "");
    if (!entry) return void res.writeHead(400).end("no such request");
    pending.delete(req.body.id!);
    const code = randomUUID();
    codes.set(code, entry);
    const back = new URL(entry.params.redirectUri);
    back.searchParams.set("code", code);
    if (entry.params.state) back.searchParams.set("state", entry.params.state);
    res.redirect(back.href);
  });
  let router: ((req: never, res: never, next: () => void) => void) | null = null;
  app.use((req, res, next) => (router ? router(req as never, res as never, next) : next()));
  const http = app.listen(0, "127.0.0.1");
  await once(http, "listening");
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return {
    url,
    // The MCP server's path is the test helper's `/mcp`: its metadata sits under that path here.
    challenge: `Bearer error="invalid_token", resource_metadata="${url}/.well-known/oauth-protected-resource/mcp"`,
    guard(mcpUrl) {
      resource = new URL(mcpUrl).href;
      router = mcpAuthRouter({
        provider,
        issuerUrl: new URL(url),
        resourceServerUrl: new URL(mcpUrl),
        resourceName: "Company tools",
      }) as never;
    },
    verify: (token) => access.get(token)?.live === true,
    expireAccessTokens() {
      for (const entry of access.values()) entry.live = false;
    },
    clients,
    get asked() {
      return state.asked;
    },
    get refreshes() {
      return state.refreshes;
    },
    get revoked() {
      return state.revoked;
    },
    get issued() {
      return state.issued;
    },
    async close() {
      http.closeAllConnections();
      http.close();
      await once(http, "close");
    },
  };
}
