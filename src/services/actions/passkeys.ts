// Renaming and removing a person's passkeys, on their security page. Adding one is a WebAuthn
// ceremony in the browser (routes/passkeys.ts calls services/accounts/passkeys.ts): it needs
// the authenticator, so it is no action an agent or a token could take. A passkey signs its
// person in, so removing one is a credential change: a token needs `manage`, agents never.
import { z } from "zod";
import { NotFoundError } from "../../lib/errors.ts";
import { recordSecurityEvent } from "../accounts/security-events.ts";
import { toSelf } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { idSchema, text } from "../validation.ts";
import { peopleOnly } from "./notification-settings.ts";
import { securityPath } from "./sessions.ts";

/** A passkey's name: the person's own word for where it lives. */
export const passkeyName = text(60).meta({
  label: "Name",
  description: "where this passkey lives, e.g. “Laptop” or “Phone”",
});

const passkeyId = idSchema.meta({ label: "Passkey", description: "the passkey's id", pickedBeside: true });

export const renamePasskey = defineAction({
  name: "rename_passkey",
  description: "Rename one of your passkeys",
  params: z.object({ id: passkeyId, name: passkeyName }),
  writes: true,
  manage: true,
  audience: toSelf("passkey"),
  available: peopleOnly,
  async execute(ctx, params) {
    const { count } = await ctx.tx.passkey.updateMany({
      where: { id: params.id, userId: ctx.actor.id, tenantId: ctx.tenant.id },
      data: { name: params.name },
    });
    if (!count) throw new NotFoundError(`No passkey ${params.id} among your passkeys`);
    return {
      status: 200,
      location: securityPath(ctx.actor.handle),
      notice: `Passkey renamed “${params.name}”.`,
    };
  },
});

export const removePasskey = defineAction({
  name: "remove_passkey",
  description: "Remove one of your passkeys: it no longer signs you in",
  params: z.object({ id: passkeyId }),
  writes: true,
  manage: true,
  audience: toSelf("passkey"),
  destructive: "This passkey stops signing you in at once. Add it again to use it again.",
  available: peopleOnly,
  async execute(ctx, params) {
    const passkey = await ctx.tx.passkey.findFirst({
      where: { id: params.id, userId: ctx.actor.id, tenantId: ctx.tenant.id },
    });
    if (!passkey) throw new NotFoundError(`No passkey ${params.id} among your passkeys`);
    await ctx.tx.passkey.delete({ where: { id: passkey.id } });
    await recordSecurityEvent(ctx.tx, {
      tenantId: ctx.tenant.id,
      userId: ctx.actor.id,
      actorId: ctx.actor.id,
      kind: "passkey_removed",
      detail: `The passkey named “${passkey.name}” was removed from your account: it no longer signs you in.`,
      ...(ctx.origin && { origin: ctx.origin }),
    });
    return {
      status: 200,
      location: securityPath(ctx.actor.handle),
      notice: `Passkey “${passkey.name}” removed.`,
    };
  },
});
