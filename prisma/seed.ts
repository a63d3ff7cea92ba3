// Seeds the `demo` workspace. Idempotent: people, studio and content are created once;
// every run issues alice a fresh API token (revoking the previous demo token) so the
// printed curl line always works.
import { loadConfig } from "../src/config.ts";
import { createPrisma } from "../src/db/prisma.ts";
import { seedDemo } from "../src/services/demo-seed.ts";

const config = loadConfig();
const prisma = createPrisma(config.DATABASE_URL);
try {
  const out = await seedDemo(prisma);
  console.log(JSON.stringify(out));
} finally {
  await prisma.$disconnect();
}
