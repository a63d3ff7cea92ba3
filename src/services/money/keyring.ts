// The process's master keys and BYOK URL policy, set once at start from the validated
// config (web app and worker). Code that seals or opens a secret asks for them here
// instead of threading the config through every page and action context.
import { DEV_ENCRYPTION_KEYS, type MasterKeys, parseMasterKeys } from "../../lib/secrets.ts";

interface Keyring {
  master: MasterKeys;
  allowPrivateUrls: boolean;
}

let current: Keyring | null = null;

export function configureKeyring(config: {
  NODE_ENV: string;
  APP_ENCRYPTION_KEYS: string;
  BYOK_ALLOW_PRIVATE_URLS?: string;
}) {
  const flag = config.BYOK_ALLOW_PRIVATE_URLS;
  current = {
    master: parseMasterKeys(config.APP_ENCRYPTION_KEYS),
    allowPrivateUrls: flag ? flag === "1" || flag === "true" : config.NODE_ENV !== "production",
  };
}

export function keyring(): Keyring {
  // Scripts that never configured one (seeds, the benchmark) get the development keys.
  current ??= { master: parseMasterKeys(DEV_ENCRYPTION_KEYS), allowPrivateUrls: true };
  return current;
}
