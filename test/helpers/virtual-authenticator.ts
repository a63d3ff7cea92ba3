// Chromium's virtual authenticator (DevTools protocol, WebAuthn domain): a platform passkey
// holder that keeps discoverable credentials and verifies its user at once, so a browser
// test makes and uses real passkeys with no device and no prompt.
import type { Page } from "playwright-core";

export interface VirtualAuthenticator {
  /** How many credentials it holds, and their sign counts. */
  credentials(): Promise<{ credentialId: string; signCount: number; isResidentCredential: boolean }[]>;
}

export async function addVirtualAuthenticator(page: Page): Promise<VirtualAuthenticator> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return {
    credentials: async () => (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials,
  };
}
