// `npm run keys:reencrypt`: re-encrypts every stored API key and webhook secret with the
// newest master key in APP_ENCRYPTION_KEYS. Safe to run repeatedly and while the app runs.
import { loadConfig } from "../config.ts";
import { createPrisma } from "../db/prisma.ts";
import { parseMasterKeys } from "../lib/secrets.ts";
import { reencryptKeys, reencryptWebhookSecrets } from "../services/money/rotation.ts";

const config = loadConfig();
const master = parseMasterKeys(config.APP_ENCRYPTION_KEYS);
const prisma = createPrisma(config.DATABASE_URL, 2);
try {
  const report = await reencryptKeys(prisma, master);
  console.log(`Re-encrypted ${report.reencrypted} key(s) with master key version ${master.newest}.`);
  const hooks = await reencryptWebhookSecrets(prisma, master);
  console.log(
    `Re-encrypted ${hooks.reencrypted} webhook secret(s) with master key version ${master.newest}.`,
  );
  for (const f of report.failed) console.error(`  key ${f.id}: ${f.error}`);
  for (const f of hooks.failed) console.error(`  webhook ${f.id}: ${f.error}`);
  if (report.failed.length) {
    console.error(`${report.failed.length} key(s) could not be decrypted with the configured versions.`);
    process.exitCode = 1;
  }
  if (hooks.failed.length) {
    console.error(
      `${hooks.failed.length} webhook secret(s) could not be decrypted with the configured versions.`,
    );
    process.exitCode = 1;
  }
} finally {
  await prisma.$disconnect();
}
