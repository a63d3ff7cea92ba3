// The one place that talks to a workspace's OpenID Provider (openid-client v6): discovery,
// the authorization URL with PKCE, state and nonce, and the code exchange whose ID token's
// claims it returns verified (signature, issuer, audience, expiry, nonce; the address from
// userinfo for that same subject when the ID token leaves it out). Plain http is
// allowed only for loopback issuers, so tests and a local provider work while a real one
// must be https. Nothing here logs: codes, tokens and the ID token stay in these calls.
import * as client from "openid-client";

/** How long one request to the provider may take before the sign-in or the save gives up. */
const PROVIDER_TIMEOUT_SECONDS = 10;

export interface ProviderSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/** The claims Cadre uses from a verified ID token. */
export interface VerifiedClaims {
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
}

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Why this issuer URL cannot be used, in words; null when it can. */
export function issuerProblem(issuer: string): string | null {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    return "must be a URL, e.g. https://login.example.com/realms/acme";
  }
  if (url.protocol === "https:") return null;
  if (url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname)) return null;
  return "must start with https:// (plain http only for a provider on this machine)";
}

/** Discovers the provider; throws (openid-client's error) when it cannot be reached or read. */
export async function discoverProvider(settings: ProviderSettings): Promise<client.Configuration> {
  const url = new URL(settings.issuer);
  return client.discovery(
    url,
    settings.clientId,
    undefined,
    client.ClientSecretBasic(settings.clientSecret),
    {
      timeout: PROVIDER_TIMEOUT_SECONDS,
      ...(url.protocol === "http:" && { execute: [client.allowInsecureRequests] }),
    },
  );
}

/** What a sign-in keeps server-side until the provider sends the person back. */
export interface FlowSecrets {
  state: string;
  nonce: string;
  codeVerifier: string;
}

export function newFlowSecrets(): FlowSecrets {
  return {
    state: client.randomState(),
    nonce: client.randomNonce(),
    codeVerifier: client.randomPKCECodeVerifier(),
  };
}

/** Where to send the browser: the provider's authorization endpoint with PKCE (S256), state and nonce. */
export async function authorizationUrl(
  config: client.Configuration,
  flow: FlowSecrets,
  redirectUri: string,
): Promise<URL> {
  return client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: "openid email profile",
    response_type: "code",
    state: flow.state,
    nonce: flow.nonce,
    code_challenge: await client.calculatePKCECodeChallenge(flow.codeVerifier),
    code_challenge_method: "S256",
  });
}

/**
 * Trades the code the provider sent back for tokens and returns the ID token's verified
 * claims; throws when the state, the nonce, the PKCE verifier or the token does not check.
 */
export async function exchangeCode(
  config: client.Configuration,
  callbackUrl: URL,
  flow: FlowSecrets,
): Promise<VerifiedClaims> {
  const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
    pkceCodeVerifier: flow.codeVerifier,
    expectedState: flow.state,
    expectedNonce: flow.nonce,
    idTokenExpected: true,
  });
  const claims = tokens.claims();
  if (!claims) throw new Error("the provider sent no ID token");
  // A provider following the spec to the letter keeps the scope's claims (email, name) for
  // its userinfo endpoint when it issues an access token: asked there, for the same subject.
  const profile =
    typeof claims.email === "string"
      ? claims
      : await client.fetchUserInfo(config, tokens.access_token, claims.sub);
  const text = (value: unknown) => (typeof value === "string" && value.trim() ? value.trim() : null);
  return {
    issuer: claims.iss,
    subject: claims.sub,
    email: text(profile.email)?.toLowerCase() ?? null,
    emailVerified: profile.email_verified === true,
    name: text(profile.name),
  };
}
