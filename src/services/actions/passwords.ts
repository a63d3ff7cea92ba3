// change_password, on the person's security page: the current password first (a session left
// open on a shared computer must not be enough to take the account), then the new one checked
// for strength; every other session ends and the person is told by mail.
import { z } from "zod";
import { ValidationError } from "../../lib/errors.ts";
import { assertStrong, storePassword } from "../accounts/passwords.ts";
import { hashPassword, verifyPassword } from "../passwords.ts";
import { toSelf } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { peopleOnly } from "./notification-settings.ts";
import { currentSession, securityPath } from "./sessions.ts";

const password = (label: string, description: string) =>
  z
    .string()
    .min(1, "required")
    .max(1000, "at most 1000 characters")
    .meta({ label, secret: true, description });

export const changePassword = defineAction({
  name: "change_password",
  description: "Change your password: the current one is needed; every other session of yours ends",
  params: z.object({
    current_password: password("Current password", "the one you sign in with now"),
    new_password: password(
      "New password",
      "at least 10 characters, hard to guess: a few words together work well",
    ),
  }),
  writes: true,
  manage: true,
  audience: toSelf("password"),
  available: peopleOnly,
  async execute(ctx, params) {
    const person = await ctx.tx.user.findUniqueOrThrow({ where: { id: ctx.actor.id } });
    if (!(await verifyPassword(params.current_password, person.passwordHash)))
      throw new ValidationError([
        { field: "current_password", message: "this is not your current password" },
      ]);
    assertStrong(person, params.new_password, "new_password", ctx.tenant.name);
    const ended = await storePassword(ctx.tx, person, await hashPassword(params.new_password), {
      kind: "password_changed",
      keep: currentSession(ctx),
      ...(ctx.origin && { origin: ctx.origin }),
    });
    return {
      status: 200,
      location: securityPath(person.handle),
      notice: `Password changed.${ended ? ` ${ended === 1 ? "Your other session was" : `Your ${ended} other sessions were`} ended.` : ""}`,
    };
  },
});
