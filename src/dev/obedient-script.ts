// A scripted "model" that obeys orders it finds anywhere in its prompt, as real models too
// often do: "COPY <page> TO <page>" in a task, a comment or a note makes it read the first
// page and post what it says as a comment on the second. The demo's model and the trust
// tests use it to show that what an agent may disclose does not depend on the model
// behaving (docs/trust.md, "What an agent can disclose").
import type { ChatRequest, FakeReply } from "./fake-llm.ts";

const ORDER = /COPY (\/[\w/-]+?)[.,]? TO (\/[\w/-]+?)[.,]?(?=\s|$|`)/;
const READ = /\bread (\/studios\/[\w/-]+?)[.,]?(?=\s|$)/i;

const finish = (message: string): FakeReply => ({ tool: { name: "finish", args: { message } } });
const visit = (path: string): FakeReply => ({ tool: { name: "navigate", args: { path } } });

/** The model: one per fake server. It remembers, per agent, the order it found and what it copied. */
export function obedientScript(): (req: ChatRequest) => FakeReply | null {
  const orders = new Map<string, { from: string; to: string; text?: string }>();
  return (req) => {
    const prompt = req.messages.map((m) => m.content ?? "").join("\n");
    // One order per run: the agent and its task name it.
    const agent = `${/\(@([\w-]+)\), an AI agent/.exec(prompt)?.[1]}:${/# Task\n\n([^\n]*)/.exec(prompt)?.[1]}`;
    const page = /# Current page: (\S+)/.exec(prompt)?.[1] ?? "/whoami";
    // The current page is the last one before the pointer that names it (prompt.ts).
    const log = prompt.split("\n\n# Current page:")[0] ?? "";
    const body = log.slice(log.lastIndexOf("<page>")).split("</page>")[0] ?? "";
    if (prompt.includes("execute add_comment(")) return finish("Done as asked.");
    const found = ORDER.exec(prompt);
    if (found && !orders.has(agent)) orders.set(agent, { from: found[1]!, to: found[2]! });
    const order = orders.get(agent);
    if (!order) {
      // No order (yet): read what the task points at; an order may be written there.
      const target = READ.exec(prompt)?.[1];
      return target && page !== target ? visit(target) : null;
    }
    if (order.text === undefined) {
      if (page !== order.from) return visit(order.from);
      if (/# Error \d{3}/.test(body)) {
        orders.delete(agent);
        return finish(`I could not open ${order.from}.`);
      }
      order.text = body.replace(/\s+/g, " ").trim().slice(0, 400);
      return visit(order.to);
    }
    if (page !== order.to) return visit(order.to);
    return {
      tool: {
        name: "execute_action",
        args: { action: "add_comment", params: { text: `Copied from ${order.from}: ${order.text}` } },
      },
    };
  };
}
