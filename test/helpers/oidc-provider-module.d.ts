// oidc-provider ships no types (and @types/oidc-provider is not installed): the part of its
// API test/helpers/oidc-provider.ts uses, as its README documents it.
declare module "oidc-provider" {
  import type { Server } from "node:http";

  interface Grant {
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }

  export interface KoaContextWithOIDC {
    oidc: {
      provider: Provider;
      session?: { accountId: string; grantIdFor(clientId: string): string | undefined };
      client?: { clientId: string };
      result?: { consent?: { grantId?: string } };
    };
  }

  interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }

  export interface Configuration {
    clients: Record<string, unknown>[];
    pkce?: { required(): boolean };
    claims?: Record<string, string[]>;
    cookies?: { keys: string[] };
    features?: Record<string, { enabled: boolean }>;
    loadExistingGrant?(ctx: KoaContextWithOIDC): Promise<Grant | undefined>;
    findAccount(ctx: KoaContextWithOIDC, sub: string): Promise<Account | undefined>;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Configuration);
    Grant: {
      new (init: { clientId: string; accountId: string }): Grant;
      find(id: string): Promise<Grant | undefined>;
    };
    Client: { prototype: { redirectUriAllowed(uri: string): boolean } };
    listen(port: number, host: string, callback: () => void): Server;
  }
}
