// Seeds the `demo` workspace. Idempotent: people, studio and content are created once.
// DEMO_TOKEN (bin/demo passes the token it printed last time) stays alice's token while it
// works; otherwise she gets a fresh one, the previous demo tokens revoked.
import { loadConfig } from "../src/config.ts";
import { createPrisma } from "../src/db/prisma.ts";
import { seedDemo } from "../src/dev/demo-seed.ts";

const config = loadConfig();
const prisma = createPrisma(config.DATABASE_URL);
try {
  const out = await seedDemo(prisma, process.env.DEMO_TOKEN || undefined);
  console.log(JSON.stringify(out));
} finally {
  await prisma.$disconnect();
}
