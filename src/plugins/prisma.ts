import fp from "fastify-plugin";
import type { PrismaClient } from "../db/prisma.ts";

declare module "fastify" {
  interface FastifyInstance {
    prisma: PrismaClient;
  }
}

/** The app borrows a client it is given (tests share one) or owns the one it creates. */
export default fp<{ prisma: PrismaClient; owned: boolean }>(
  async (app, opts) => {
    app.decorate("prisma", opts.prisma);
    if (opts.owned) app.addHook("onClose", async () => opts.prisma.$disconnect());
  },
  { name: "prisma" },
);
