// The one-line notice a redirected form leaves for the page it lands on ("Token created"),
// in a signed cookie read once. Never a secret: those go through services/reveals.ts.
import type { FastifyReply, FastifyRequest } from "fastify";

export interface Flash {
  notice: string;
  warning?: boolean;
}

export function setFlash(req: FastifyRequest, reply: FastifyReply, flash: Flash) {
  req.server.cookieJar.set(reply, "flash", JSON.stringify({ notice: flash.notice, warning: flash.warning }), {
    signed: true,
  });
}

export function takeFlash(req: FastifyRequest, reply: FastifyReply): Flash | undefined {
  const raw = req.server.cookieJar.read(req, "flash");
  if (!raw) return undefined;
  req.server.cookieJar.clear(reply, "flash");
  const v = req.unsignCookie(raw);
  if (!v.valid || !v.value) return undefined;
  try {
    const f = JSON.parse(v.value) as Flash;
    return typeof f.notice === "string" ? f : undefined;
  } catch {
    return undefined;
  }
}
