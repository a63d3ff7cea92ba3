// What a browser may do with our answers, in one place. Every answer says `nosniff` (a
// markdown page is never run as a script or styled as HTML) and sends no Referer off the
// workspace. An HTML page also carries a strict Content-Security-Policy: scripts, styles,
// fonts and live streams from this origin only, images from it or inline data, forms posting
// back to it, no plugins, no `<base>`, and no framing. The pages keep no inline script or
// style (public/forms.js and public/live.js are files), so the policy needs no nonce, and
// markup an agent's text ever smuggled past the markdown renderer runs nothing, loads
// nothing from elsewhere and posts nowhere else.
import fp from "fastify-plugin";

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
].join("; ");

export const REFERRER_POLICY = "same-origin";

export default fp(
  async (app) => {
    app.addHook("onSend", async (_req, reply, payload) => {
      reply.header("x-content-type-options", "nosniff");
      reply.header("referrer-policy", REFERRER_POLICY);
      const type = String(reply.getHeader("content-type") ?? "");
      if (type.startsWith("text/html")) {
        reply.header("content-security-policy", CONTENT_SECURITY_POLICY);
        // The older header for browsers that predate frame-ancestors.
        reply.header("x-frame-options", "DENY");
      }
      return payload;
    });
  },
  { name: "security-headers" },
);
