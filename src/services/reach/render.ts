// News in the shapes it leaves in: a mail (text and HTML, short, plain) and an outgoing
// webhook's body (Cadre's JSON, or a Slack incoming webhook's `{text, blocks}`).
import type { News } from "./news.ts";

export interface Mail {
  subject: string;
  text: string;
  html: string;
}

export interface Told {
  news: News;
  origin: string;
  /** The page it acts on, named for this reader (null: not named). */
  title: string | null;
}

export interface ReviewUrls {
  approve: string;
  reject: string;
}

const esc = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!,
  );

/** "@scout wants your approval to comment and reply, on the note “Plan” in General" ("in the studio General"). */
export function headline(told: Told): string {
  const where = told.title ? `, ${told.title.startsWith("the studio ") ? "in" : "on"} ${told.title}` : "";
  return `@${told.news.agent.handle} ${told.news.what}${where}`;
}

const when = (date: Date) => `${date.toISOString().slice(0, 16).replace("T", " ")} UTC`;

export function mailOf(told: Told, links: ReviewUrls | null, settingsUrl: string): Mail {
  const line = headline(told);
  const look = `${told.origin}${told.news.link}`;
  const expires = told.news.data.pending_action as { expires_at?: string } | undefined;
  const until = expires?.expires_at ? `It expires ${when(new Date(expires.expires_at))}.` : "";
  const why = `You get this because you manage @${told.news.agent.handle} (${told.news.agent.name}).`;
  const text = [
    `${line}.`,
    "",
    ...(links ? [`Approve: ${links.approve}`, `Reject: ${links.reject}`, ""] : []),
    `${links ? "See it in Cadre" : "See it"}: ${look}`,
    ...(until ? ["", until] : []),
    "",
    `${why} Choose what you hear of, and how: ${settingsUrl}`,
  ].join("\n");
  const button = (href: string, label: string, primary: boolean) =>
    `<a href="${esc(href)}" style="display:inline-block;padding:8px 16px;margin:0 8px 8px 0;border-radius:6px;text-decoration:none;${primary ? "background:#1f5f99;color:#fff" : "border:1px solid #888;color:#222"}">${esc(label)}</a>`;
  const html = `<!doctype html><html><body style="font-family:system-ui,sans-serif;font-size:15px;line-height:1.5;color:#222;max-width:560px">
<p>${esc(line)}.</p>
${links ? `<p>${button(links.approve, "Approve…", true)}${button(links.reject, "Reject…", false)}</p><p style="font-size:13px;color:#555">Each button opens the action in Cadre; nothing happens until you confirm there.</p>` : ""}
<p><a href="${esc(look)}">${links ? "See it in Cadre" : "See it"}</a></p>
${until ? `<p>${esc(until)}</p>` : ""}
<p style="font-size:13px;color:#555">${esc(why)} <a href="${esc(settingsUrl)}">Choose what you hear of, and how</a>.</p>
</body></html>`;
  return { subject: line, text, html };
}

/** One mail for a day's news: a line each, linked. */
export function digestOf(items: { subject: string; link: string }[], settingsUrl: string): Mail {
  const subject = `Your agents today: ${items.length} ${items.length === 1 ? "update" : "updates"}`;
  const text = [
    ...items.map((i) => `- ${i.subject}\n  ${i.link}`),
    "",
    `Choose what you hear of, and how: ${settingsUrl}`,
  ].join("\n");
  const html = `<!doctype html><html><body style="font-family:system-ui,sans-serif;font-size:15px;line-height:1.5;color:#222;max-width:560px">
<p>${esc(subject)}</p><ul>${items.map((i) => `<li><a href="${esc(i.link)}">${esc(i.subject)}</a></li>`).join("")}</ul>
<p style="font-size:13px;color:#555"><a href="${esc(settingsUrl)}">Choose what you hear of, and how</a>.</p>
</body></html>`;
  return { subject, text, html };
}

// Slack's mrkdwn: these three are its markup.
const slackEsc = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** An outgoing webhook's body, exactly as sent and signed. */
export function hookBody(
  told: Told,
  format: "json" | "slack",
  deliveryId: string,
  workspace: string,
): string {
  const url = `${told.origin}${told.news.link}`;
  const line = headline(told);
  if (format === "slack") {
    const label = told.news.pendingId ? "Review" : "Open";
    return JSON.stringify({
      text: `${slackEsc(line)} <${url}|${label}>`,
      blocks: [
        { type: "section", text: { type: "mrkdwn", text: slackEsc(line) } },
        {
          type: "actions",
          elements: [{ type: "button", text: { type: "plain_text", text: label }, url }],
        },
      ],
    });
  }
  return JSON.stringify({
    id: deliveryId,
    event: told.news.hook,
    created_at: told.news.event.createdAt.toISOString(),
    workspace,
    agent: { handle: told.news.agent.handle, name: told.news.agent.name },
    summary: line,
    place: told.news.place && told.title ? { path: told.news.place, title: told.title } : null,
    url,
    ...told.news.data,
  });
}
