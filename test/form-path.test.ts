// The browser's form path, over real HTTP (inject) and Postgres: a form posts to its own page
// naming the action; a destructive action asks first there and only there (JSON, markdown and
// agents' calls to <page>/actions/<name> run at once); a mistake names the field by its label.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiToken } from "../src/services/tokens.ts";
import { buildTestApp, login, makeWorld, md, testPrisma } from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => app.close());

const db = testPrisma;
const TOKENS = "/u/alice/settings/tokens";

describe("a form's own page", () => {
  it("asks before revoking from a form, runs on confirm; a markdown client's revoke runs at once", async () => {
    const w = await makeWorld("fp");
    const { row } = await createApiToken(db(), w.tenant.id, w.alice.id, "laptop");
    const b = await login(app, w, w.alice);
    const ask = await b.post(TOKENS, { _action: "revoke_api_token", id: row.id });
    expect(ask.statusCode).toBe(200);
    expect(ask.body).toContain('<section class="confirm"');
    expect(ask.body).toContain("Revoke API token?");
    expect(ask.body).toContain(
      `name="_confirm" value="yes"><input type="hidden" name="id" value="${row.id}">`,
    );
    expect((await db().apiToken.findUniqueOrThrow({ where: { id: row.id } })).revokedAt).toBeNull();
    const done = await b.post(TOKENS, { _action: "revoke_api_token", id: row.id, _confirm: "yes" });
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toBe(TOKENS);
    expect((await db().apiToken.findUniqueOrThrow({ where: { id: row.id } })).revokedAt).not.toBeNull();

    const other = await createApiToken(db(), w.tenant.id, w.alice.id, "script");
    const api = await md(app, w, w.alice, "POST", `${TOKENS}/actions/revoke_api_token`, { id: other.row.id });
    expect(api.statusCode).toBe(200);
    expect(api.body).not.toContain("confirm");
    expect((await db().apiToken.findUniqueOrThrow({ where: { id: other.row.id } })).revokedAt).not.toBeNull();
  });

  it("shows a mistake on the same page at its field, in its label's words; a JSON-only client hears 406 first", async () => {
    const w = await makeWorld("fq");
    const b = await login(app, w, w.alice);
    const bad = await b.post("/u/alice/settings/api-keys", {
      _action: "add_api_key",
      label: "Lab",
      provider: "openai_compatible",
      key: "sk-1234567890",
    });
    expect(bad.statusCode).toBe(400);
    expect(issuesOf(bad.body).base_url).toBe("needed for an OpenAI-compatible provider");
    // Once: the failed form is the page's own, not repeated in the side panel.
    expect(bad.body.match(/data-action="add_api_key"/g)).toHaveLength(1);
    const json = await app.inject({
      method: "POST",
      url: "/u/alice/settings/api-keys/actions/add_api_key",
      headers: { host: w.host, authorization: `Bearer ${w.alice.token}`, accept: "application/json" },
      payload: { label: "Lab", provider: "openai_compatible", key: "sk-1234567890" },
    });
    // An action answers with a page, which has no JSON form: refused before it is even checked.
    expect(json.statusCode).toBe(406);
    expect(json.json().error.message).toContain("text/markdown or text/html");
  });
});
