// Search from any page: it runs nothing, it leads to the results page (pages/people.ts).
import { z } from "zod";
import { defineAction } from "../registry/types.ts";
import { text } from "../validation.ts";

export const searchAction = defineAction({
  name: "search",
  description: "Search notes, decisions, commitments and comments in your studios",
  params: z.object({ query: text(200) }),
  writes: false,
  async execute(_ctx, params) {
    return { status: 200, location: `/search?${new URLSearchParams({ q: params.query })}`, notice: "" };
  },
});
