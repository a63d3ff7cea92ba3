// A workspace's OpenID Connect provider, one per workspace (sso_providers): what an admin sets
// on /settings/sso, the client secret sealed like a provider key (AAD bound to tenant and row)
// and opened only to talk to the provider. `ssoOnly` makes it the only way in: /login and
// password reset refuse passwords, naming the provider.
import type { Db } from "../../db/prisma.ts";
import type { SsoProvider } from "../../generated/prisma/client.ts";
import { ValidationError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { open, seal, ssoSecretAad } from "../../lib/secrets.ts";
import { keyring } from "../money/keyring.ts";
import type { ProviderSettings } from "./sso-client.ts";

/** Where the provider sends people back: the admin registers exactly this at the provider. */
export const SSO_CALLBACK_PATH = "/login/sso/callback";

export const redirectUriFor = (origin: string) => `${origin}${SSO_CALLBACK_PATH}`;

/** The provider as pages show it: never the secret, sealed or not. */
export type ProviderView = Omit<SsoProvider, "encryptedSecret" | "secretVersion">;

export async function ssoProviderOf(db: Db, tenantId: string): Promise<ProviderView | null> {
  return db.ssoProvider.findUnique({
    where: { tenantId },
    omit: { encryptedSecret: true, secretVersion: true },
  });
}

/** The provider with its secret opened, to discover it and trade codes; null when none is set. */
export async function providerSettingsOf(
  db: Db,
  tenantId: string,
): Promise<(ProviderSettings & { provider: ProviderView }) | null> {
  const row = await db.ssoProvider.findUnique({ where: { tenantId } });
  if (!row) return null;
  const { encryptedSecret, secretVersion, ...provider } = row;
  const clientSecret = open(
    keyring().master,
    { ciphertext: Buffer.from(encryptedSecret), keyVersion: secretVersion },
    ssoSecretAad(tenantId, row.id),
  );
  return { issuer: row.issuer, clientId: row.clientId, clientSecret, provider };
}

/** The display name when passwords are refused here (SSO only), else null. */
export async function ssoOnlyName(db: Db, tenantId: string): Promise<string | null> {
  const row = await db.ssoProvider.findUnique({
    where: { tenantId },
    select: { ssoOnly: true, displayName: true },
  });
  return row?.ssoOnly ? row.displayName : null;
}

/** Why passwords are refused in a workspace that signs in with `name` only. */
export const passwordsOffReason = (name: string) =>
  `This workspace signs in with ${name} only: passwords are turned off here. Use “Sign in with ${name}”.`;

/** Why passwords are refused here, for /login and password reset; null when they are not. */
export async function passwordRefusal(db: Db, tenantId: string): Promise<string | null> {
  const name = await ssoOnlyName(db, tenantId);
  return name ? passwordsOffReason(name) : null;
}

export interface ProviderInput {
  displayName: string;
  issuer: string;
  clientId: string;
  /** Empty: keep the secret saved before. */
  clientSecret: string;
  allowedDomains: string[];
  ssoOnly: boolean;
}

/** Creates or replaces the workspace's provider in the caller's transaction; the row's id. */
export async function saveProvider(tx: Db, tenantId: string, input: ProviderInput): Promise<string> {
  const existing = await tx.ssoProvider.findUnique({ where: { tenantId }, select: { id: true } });
  const id = existing?.id ?? newId();
  const fields = {
    displayName: input.displayName,
    issuer: input.issuer,
    clientId: input.clientId,
    allowedDomains: input.allowedDomains,
    ssoOnly: input.ssoOnly,
  };
  const sealed = input.clientSecret
    ? seal(keyring().master, input.clientSecret, ssoSecretAad(tenantId, id))
    : null;
  const secret = sealed && {
    encryptedSecret: new Uint8Array(sealed.ciphertext),
    secretVersion: sealed.keyVersion,
  };
  if (existing) await tx.ssoProvider.update({ where: { id }, data: { ...fields, ...secret } });
  else if (secret) await tx.ssoProvider.create({ data: { id, tenantId, ...fields, ...secret } });
  else
    throw new ValidationError(
      [{ field: "client_secret", label: "Client secret", message: "needed the first time" }],
      "Please fix",
    );
  return id;
}

/** Removes the provider (and with it SSO only); its people keep their links for a provider set again. */
export async function removeProvider(tx: Db, tenantId: string): Promise<ProviderView | null> {
  const row = await ssoProviderOf(tx, tenantId);
  if (row) await tx.ssoProvider.delete({ where: { id: row.id } });
  return row;
}
