import { z } from "zod";

export const handleSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(
    /^[a-z0-9][a-z0-9_-]{1,31}$/,
    "2–32 characters: letters, digits, - and _, starting with a letter or digit",
  )
  // Path words that would make /studios/<handle>/… ambiguous with an action URL.
  .refine((h) => !RESERVED.has(h), "this handle is reserved");

const RESERVED = new Set(["actions", "new", "settings", "api", "admin", "assets"]);

export const idSchema = z
  .string()
  .trim()
  .regex(/^[a-z0-9]{6,32}$/, "not a valid id");

export const text = (max: number) =>
  z.string().trim().min(1, "must not be empty").max(max, `at most ${max} characters`);
export const longText = (max: number, description?: string) =>
  text(max).meta({ multiline: true, description });
export const optionalText = (max: number, description?: string) =>
  z
    .string()
    .trim()
    .max(max, `at most ${max} characters`)
    .meta(description ? { description } : {})
    .optional();
