// A client for live pages over real HTTP, as EventSource is one: it asks for
// `text/event-stream`, sends `Last-Event-ID` when told, and parses events as they arrive.
// Tests read a stream until what they wait for has come, or until the server ends it.
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import type { Person, World } from "./app.ts";

export interface SseEvent {
  event: string;
  id: string;
  // biome-ignore lint/suspicious/noExplicitAny: each event's data is JSON of its own shape
  data: any;
}

export interface LiveClient {
  status: number;
  headers: http.IncomingHttpHeaders;
  events: SseEvent[];
  /** Everything received, comments (heartbeats) included. */
  raw(): string;
  /** Resolves with the events once `pred` holds of them (checked as each arrives), or rejects after `ms`. */
  until(pred: (events: SseEvent[]) => boolean, ms?: number): Promise<SseEvent[]>;
  /** Resolves once the server has ended the response. */
  ended: Promise<void>;
  close(): void;
}

export interface LiveTarget {
  port: number;
  host: string;
  path: string;
  token?: string;
  cookies?: Record<string, string>;
  lastEventId?: string;
}

/** The port an app listens on (listening on a random one first if it does not yet). */
export async function portOf(app: FastifyInstance): Promise<number> {
  if (!app.server.listening) await app.listen({ port: 0, host: "127.0.0.1" });
  return (app.server.address() as AddressInfo).port;
}

export const as = (w: World, who: Person) => ({ host: w.host, token: who.token });

export function openLive(t: LiveTarget): Promise<LiveClient> {
  return new Promise((resolve, reject) => {
    const req = http.get({
      host: "127.0.0.1",
      port: t.port,
      path: t.path,
      headers: {
        host: t.host,
        accept: "text/event-stream",
        ...(t.token && { authorization: `Bearer ${t.token}` }),
        ...(t.cookies && {
          cookie: Object.entries(t.cookies)
            .map(([k, v]) => `${k}=${v}`)
            .join("; "),
        }),
        ...(t.lastEventId && { "last-event-id": t.lastEventId }),
      },
    });
    req.on("error", reject);
    req.on("response", (res) => {
      const events: SseEvent[] = [];
      let raw = "";
      let buffer = "";
      const waiters = new Set<() => void>();
      const ended = new Promise<void>((done) => {
        res.on("end", done);
        res.on("close", done);
      });
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        raw += chunk;
        buffer += chunk;
        let cut = buffer.indexOf("\n\n");
        while (cut >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const fields = Object.fromEntries(
            block
              .split("\n")
              .filter((l) => l && !l.startsWith(":"))
              .map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trimStart()]),
          );
          if (fields.event)
            events.push({
              event: fields.event,
              id: fields.id ?? "",
              data: JSON.parse(fields.data ?? "null"),
            });
          cut = buffer.indexOf("\n\n");
        }
        for (const w of [...waiters]) w();
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        raw: () => raw,
        ended,
        until(pred, ms = 15_000) {
          return new Promise((ok, fail) => {
            const check = () => {
              if (!pred(events)) return;
              cleanup();
              ok(events);
            };
            const timer = setTimeout(() => {
              cleanup();
              fail(new Error(`live: timed out; got ${events.map((e) => `${e.event}@${e.id}`).join(" ")}`));
            }, ms);
            const gone = () => {
              if (pred(events)) return check();
              cleanup();
              fail(
                new Error(`live: the stream ended; got ${events.map((e) => `${e.event}@${e.id}`).join(" ")}`),
              );
            };
            const cleanup = () => {
              clearTimeout(timer);
              waiters.delete(check);
            };
            waiters.add(check);
            void ended.then(gone);
            check();
          });
        },
        close: () => req.destroy(),
      });
    });
  });
}

/** The step numbers a stream delivered, in order. */
export const stepNumbers = (events: SseEvent[]) =>
  events.filter((e) => e.event === "step").map((e) => e.data.number);

export const statusOf = (events: SseEvent[]) => events.filter((e) => e.event === "status").at(-1)?.data.state;
