// Everything a leak test reads: every key under a queue prefix in Redis, every row of the
// database. Shared by the provider-key and webhook-secret leak tests.
import { createRedis } from "../../src/db/redis.ts";
import { testPrisma } from "./app.ts";

/** Every key and value under a Redis prefix, as text: strings, hashes, lists, sets, sorted sets, streams. */
export async function redisDump(redisUrl: string, prefix: string): Promise<string[]> {
  const r = createRedis(redisUrl, "worker");
  const out: string[] = [];
  try {
    let cursor = "0";
    do {
      const [next, keys] = await r.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      cursor = next;
      for (const k of keys) {
        const type = await r.type(k);
        const value =
          type === "string"
            ? await r.get(k)
            : type === "hash"
              ? await r.hgetall(k)
              : type === "list"
                ? await r.lrange(k, 0, -1)
                : type === "set"
                  ? await r.smembers(k)
                  : type === "zset"
                    ? await r.zrange(k, 0, -1, "WITHSCORES")
                    : type === "stream"
                      ? await r.xrange(k, "-", "+")
                      : `(${type})`;
        out.push(`${k} ${JSON.stringify(value)}`);
      }
    } while (cursor !== "0");
  } finally {
    r.disconnect();
  }
  return out;
}

/** Every row of every table in the public schema, as JSON text. */
export async function databaseDump(): Promise<{ table: string; row: string }[]> {
  const tables = await testPrisma().$queryRaw<{ name: string }[]>`
    SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`;
  const out: { table: string; row: string }[] = [];
  for (const { name } of tables) {
    const rows = await testPrisma().$queryRawUnsafe<{ j: string }[]>(
      `SELECT row_to_json(t)::text AS j FROM "${name}" t`,
    );
    for (const r of rows) out.push({ table: name, row: r.j });
  }
  return out;
}
