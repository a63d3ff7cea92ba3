import type { FastifyInstance } from "fastify";

export default async function healthRoutes(app: FastifyInstance) {
  app.get("/healthz", async (_req, reply) => {
    await app.prisma.$queryRaw`SELECT 1`;
    return reply.send({ ok: true });
  });
}
