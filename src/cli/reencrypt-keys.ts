// `npm run keys:reencrypt`: re-encrypts every stored secret (provider keys, webhook secrets,
// TOTP seeds, SSO client secrets, tool connections' tokens and clients) with the newest master key in APP_ENCRYPTION_KEYS. Safe to
// run repeatedly and while the app runs.
import { loadConfig } from "../config.ts";
import { createPrisma } from "../db/prisma.ts";
import { parseMasterKeys } from "../lib/secrets.ts";
import {
  reencryptKeys,
  reencryptSsoSecrets,
  reencryptTotpSeeds,
  reencryptWebhookSecrets,
} from "../services/money/rotation.ts";
import { reencryptToolConnections } from "../services/tools/rotation.ts";

const KINDS = [
  ["key", reencryptKeys],
  ["webhook secret", reencryptWebhookSecrets],
  ["two-factor seed", reencryptTotpSeeds],
  ["SSO client secret", reencryptSsoSecrets],
  ["tool connection secret", reencryptToolConnections],
] as const;

const config = loadConfig();
const master = parseMasterKeys(config.APP_ENCRYPTION_KEYS);
const prisma = createPrisma(config.DATABASE_URL, 2);
try {
  for (const [kind, reencrypt] of KINDS) {
    const report = await reencrypt(prisma, master);
    console.log(`Re-encrypted ${report.reencrypted} ${kind}(s) with master key version ${master.newest}.`);
    for (const f of report.failed) console.error(`  ${kind} ${f.id}: ${f.error}`);
    if (report.failed.length) {
      console.error(
        `${report.failed.length} ${kind}(s) could not be decrypted with the configured versions.`,
      );
      process.exitCode = 1;
    }
  }
} finally {
  await prisma.$disconnect();
}
