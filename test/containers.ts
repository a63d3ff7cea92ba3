// Postgres and Redis in Docker, for a test run on a machine that has neither configured nor
// installed but has a Docker engine (bin/lib/services.sh decides, and names them in
// CADRE_TEST_CONTAINERS). testcontainers is imported only then: it needs that engine, and a
// machine with local servers never loads it. Its reaper removes the containers if the run dies.
import type { StartedTestContainer } from "testcontainers";

export interface TestServices {
  /** Set for the services started here; the others come from the environment as usual. */
  databaseUrl?: string;
  redisUrl?: string;
  stop(): Promise<void>;
}

export async function startContainers(wanted: string | undefined): Promise<TestServices> {
  const want = new Set((wanted ?? "").split(/\s+/).filter(Boolean));
  if (!want.size) return { stop: async () => undefined };
  const { GenericContainer, Wait } = await import("testcontainers");
  const started: StartedTestContainer[] = [];
  const out: TestServices = { stop: () => Promise.all(started.map((c) => c.stop())).then(() => undefined) };
  try {
    if (want.has("postgres")) {
      // The image docker-compose.yml runs; trust, as there, since it listens on this machine only.
      const pg = await new GenericContainer("postgres:16")
        .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: "trust", POSTGRES_DB: "cadre" })
        .withExposedPorts(5432)
        .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
        .start();
      started.push(pg);
      out.databaseUrl = `postgresql://postgres@${pg.getHost()}:${pg.getMappedPort(5432)}/cadre`;
    }
    if (want.has("redis")) {
      const redis = await new GenericContainer("redis:7")
        .withCommand(["redis-server", "--save", "", "--appendonly", "no"])
        .withExposedPorts(6379)
        .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
        .start();
      started.push(redis);
      out.redisUrl = `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`;
    }
  } catch (err) {
    await out.stop();
    throw new Error(
      `Starting ${[...want].join(" and ")} in Docker (testcontainers) failed: ${(err as Error).message}`,
    );
  }
  return out;
}
