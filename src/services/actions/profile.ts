// A person's own name and bio (pages/settings.ts).
import { z } from "zod";
import { ValidationError } from "../../lib/errors.ts";
import { toWorkspace } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { optionalText } from "../validation.ts";

export const updateProfile = defineAction({
  name: "update_profile",
  needs: ["user"],
  description: "Change your display name or bio",
  params: z.object({
    // A prefilled form sends every field: emptied, the bio clears and the name is refused.
    name: optionalText(80).meta({ clears: true }),
    bio: optionalText(2000, "a few words about you").meta({ multiline: true, clears: true }),
  }),
  writes: true,
  audience: toWorkspace("profile"),
  current: (scope) => ({ name: scope.user?.name, bio: scope.user?.bio }),
  async execute(ctx, params, scope) {
    const { user } = scope;
    if (params.name === undefined && params.bio === undefined)
      throw new ValidationError([{ field: "", message: "give a name or a bio to change" }]);
    if (params.name !== undefined && !params.name)
      throw new ValidationError([{ field: "name", message: "must not be empty" }]);
    await ctx.tx.user.update({
      where: { id: user.id },
      data: {
        ...(params.name !== undefined && { name: params.name }),
        ...(params.bio !== undefined && { bio: params.bio }),
      },
    });
    return { status: 200, location: `/u/${user.handle}/settings`, notice: "Profile updated" };
  },
});
