// Provider keys as the BYOK tests make and read them.
import { randomBytes } from "node:crypto";
import { testPrisma } from "./app.ts";

/** A provider-looking key no other test uses. */
export const fakeKey = (tag = "sk-test") => `${tag}-${randomBytes(12).toString("hex")}`;
/** What a key's hint shows. */
export const last4 = (key: string) => key.slice(-4);
/** A key's row as stored now. */
export const keyRow = (id: string) => testPrisma().agentApiKey.findUniqueOrThrow({ where: { id } });
