// One name per idea across actions: what an action acts on is `id`, a search is `q`; the
// earlier names still work for a client that sends them (docs/markdown-api.md).
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { registry } from "../src/services/catalog/catalog.ts";
import { fields, parseParams } from "../src/services/registry/params.ts";

describe("param names", () => {
  it("a row an action acts on is `id`: no other param names an id, but a vote's option and an SSO client's", () => {
    const odd = [...registry.actions.values()].flatMap((action) =>
      fields(action.params)
        .filter((field) => /(^|_)id$/.test(field.name) && field.name !== "id")
        .map((field) => `${action.name}.${field.name}`),
    );
    // The identity provider's own word for it: what an admin copies from there.
    expect(odd.sort()).toEqual(["set_sso_provider.client_id", "vote.option_id"]);
  });

  it("no action shows a former name", () => {
    const former = new Set(["webhook_id", "key_id", "schedule", "subscription", "invitation"]);
    const shown = [...registry.actions.values()].flatMap((action) =>
      fields(action.params)
        .filter((field) => former.has(field.name))
        .map((field) => `${action.name}.${field.name}`),
    );
    expect(shown).toEqual([]);
  });

  it.each([
    ["delete_webhook", "webhook_id"],
    ["revoke_api_key", "key_id"],
    ["pause_schedule", "schedule"],
    ["remove_subscription", "subscription"],
    ["revoke_invitation", "invitation"],
  ])("%s still takes its former %s", (name, former) => {
    const params = parseParams(registry.actions.get(name)!.params, { [former]: "abc123" }, { form: false });
    expect(params).toEqual({ id: "abc123" });
  });

  it("a body sending both names is refused, naming the former; a former name is never shown", () => {
    const schema = z.object({ id: z.string().meta({ formerly: "thing" }) });
    expect(() => parseParams(schema, { id: "new", thing: "old" }, { form: false })).toThrow(/thing/);
    expect(fields(schema).map((field) => field.name)).toEqual(["id"]);
  });
});
