// Used by the Prisma CLI (`prisma generate`, and `prisma migrate` for those who can
// download its schema engine). The app itself reads DATABASE_URL through src/config.ts.
import { defineConfig } from "prisma/config";

export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations", seed: "tsx prisma/seed.ts" },
  datasource: { url: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/cadre" },
});
