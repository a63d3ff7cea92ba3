// The demo's scripted "model": reads the navigator's prompt and plays a polite agent —
// open the page that triggered the run, reply with a comment (or, asked to write a note,
// post one in that studio), finish. It exists so the
// demo works without an API key; with LLM_BASE_URL set, the same demo uses a real model.
import type { ChatRequest, FakeReply } from "./fake-llm.ts";
import { obedientScript } from "./obedient-script.ts";

export const DEMO_MODEL = "cadre-demo-scripted";

// Orders found in the prompt are obeyed first, as a real model might: the demo shows what
// Cadre does about it (docs/trust.md, "What an agent can disclose").
const obey = obedientScript();

export function demoScript(req: ChatRequest): FakeReply {
  const obeyed = obey(req);
  if (obeyed) return obeyed;
  const prompt = req.messages.map((m) => m.content ?? "").join("\n");
  const identity = /You are (.+?) \(@([\w-]+)\)/.exec(prompt);
  const current = /# Current page: (\S+)/.exec(prompt)?.[1] ?? "/whoami";
  const target = /at (\/studios\/\S+?)\.\n/.exec(prompt)?.[1];
  const replyTo = /The comment \(id `(\w+)`\)/.exec(prompt)?.[1];
  const asker = /^(.+?) \(@([\w-]+)\) (?:mentioned you|replied|commented)/m.exec(prompt);
  const commented = /execute add_comment\(/.test(prompt);
  const finish = (message: string): FakeReply => ({ tool: { name: "finish", args: { message } } });

  if (/execute create_note\(/.test(prompt)) return finish("Posted the note, or asked for approval to.");
  if (commented) return finish("Replied in the thread.");
  // "write a note" in what woke it: a note in that studio (@scribe's wait for an admin's approval).
  const studio =
    target && /\b(?:write|post) a note\b/i.test(prompt) ? /^\/studios\/[\w-]+/.exec(target)?.[0] : undefined;
  if (studio) {
    if (current !== studio) return { tool: { name: "navigate", args: { path: studio } } };
    const title = `A note for ${asker ? `@${asker[2]}` : "the team"}`;
    const text =
      "Written by Cadre's scripted demo model: with a real model (LLM_BASE_URL) this would be the note you asked for.";
    return { tool: { name: "execute_action", args: { action: "create_note", params: { title, text } } } };
  }
  if (target && current !== target) return { tool: { name: "navigate", args: { path: target } } };
  if (target && current === target) {
    const hello = asker ? `Hi @${asker[2]}! ` : "Hi! ";
    const text = `${hello}I'm ${identity?.[1] ?? "a subagent"}, running on Cadre's scripted demo model, so this reply is canned — set LLM_BASE_URL to give me a real brain. I read this page and I'm on it.`;
    return {
      tool: {
        name: "execute_action",
        args: { action: "add_comment", params: { text, ...(replyTo && { reply_to: replyTo }) } },
      },
    };
  }
  return finish(
    "I'm running on Cadre's scripted demo model, which only knows how to answer @mentions with a comment. Set LLM_BASE_URL to run real tasks.",
  );
}
