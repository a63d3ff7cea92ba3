// Live pages. A page that can change while it is open says so (`<main data-live>`, with the
// position its content was rendered at); this script opens the page's own URL as a stream
// of server-sent events and applies what arrives. Without it every page still works: it
// just does not move until reloaded. No framework: the server renders everything, and
// this only places what the server rendered.
//
// - A run page gets each step as it is recorded (`step`), "thinking…" while the model is
//   called (`thinking`) with its reply as it streams (`text`, the whole reply so far each
//   time, until the step replaces it), and status changes (`status`), after which the page is read again
//   for the parts a status changes (the final message, the actions).
// - A thread or a list of runs gets `changed`, and is read again.
// Reading a page again replaces only what differs from what was shown, so a form being
// filled in, or a step its reader opened, is left alone.
(() => {
  const main = document.querySelector("main[data-live]");
  if (!main || !window.EventSource) return;
  const path = main.dataset.live;
  const query = location.pathname === path ? location.search.slice(1) : "";
  const ENDED = ["completed", "failed", "cancelled", "timed_out", "skipped"];
  const served = new WeakMap();

  const content = () => document.querySelector("article.content");
  const panel = () => document.querySelector("aside.actions");
  const remember = (parent) => {
    for (const c of parent?.children ?? []) served.set(c, c.outerHTML);
  };
  const fromHtml = (html) => {
    const t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  };

  /**
   * Makes `parent`'s elements those of `next`, keeping each element whose served HTML is
   * unchanged (and so its state: a form being filled, a fold opened). `#run-steps` is kept
   * whatever its HTML: live steps are added to it, never replaced.
   */
  function reconcile(parent, next) {
    if (!parent || !next) return;
    const key = (el, html) => (el.id === "run-steps" ? "#run-steps" : html);
    const pool = new Map();
    for (const c of parent.children) {
      const k = key(c, served.get(c) ?? c.outerHTML);
      pool.set(k, [...(pool.get(k) ?? []), c]);
    }
    const wanted = [...next.children].map((n) => {
      const reused = pool.get(key(n, n.outerHTML))?.shift();
      if (reused) return reused;
      const fresh = document.importNode(n, true);
      served.set(fresh, n.outerHTML);
      return fresh;
    });
    const keep = new Set(wanted);
    for (const c of [...parent.children]) if (!keep.has(c)) c.remove();
    let cursor = parent.firstElementChild;
    for (const el of wanted) {
      if (el === cursor) cursor = cursor.nextElementSibling;
      else parent.insertBefore(el, cursor);
    }
  }

  /** The actions beside the page: changed where they differ, gone when none is left (a finished run's Stop), back when one is. */
  function syncPanel(doc) {
    const layout = document.querySelector("div.layout");
    const next = doc.querySelector("aside.actions");
    const old = panel();
    if (!layout) return;
    layout.className = doc.querySelector("div.layout")?.className ?? layout.className;
    if (old && next) reconcile(old, next);
    else if (old) old.remove();
    else if (next) layout.append(document.importNode(next, true));
  }

  let reading = null;
  let again = false;
  /** Reads the page again and shows what changed; one read at a time, the last request wins. */
  async function refresh() {
    if (reading) {
      again = true;
      return reading;
    }
    reading = (async () => {
      do {
        again = false;
        try {
          const res = await fetch(`${path}${query ? `?${query}` : ""}`, {
            headers: { accept: "text/html" },
            credentials: "same-origin",
          });
          if (!res.ok) return;
          const doc = new DOMParser().parseFromString(await res.text(), "text/html");
          const steps = doc.getElementById("run-steps");
          if (steps) for (const d of steps.querySelectorAll("details.step")) addStep(d.outerHTML, false);
          reconcile(content(), doc.querySelector("article.content"));
          syncPanel(doc);
        } catch {
          // Offline for a moment: the stream reconnects, and the next event reads again.
        }
      } while (again);
    })().finally(() => {
      reading = null;
    });
    return reading;
  }

  // ---- the run page --------------------------------------------------------------------------
  // As src/services/pages/run-steps.ts folds a long run's steps.
  const FOLD_AFTER = 8;
  const OPEN_AT_END = 3;
  let thinking = null;
  let ticker = null;

  function stopThinking() {
    thinking?.el.remove();
    thinking = null;
    clearInterval(ticker);
  }

  function showThinking(step, since) {
    const box = document.getElementById("run-steps");
    if (!box || document.getElementById(`step-${step}`)) return;
    if (!thinking) {
      const el = document.createElement("div");
      el.className = "thinking-box";
      const label = document.createElement("p");
      label.className = "thinking";
      label.setAttribute("role", "status");
      el.append(label);
      box.append(el);
      thinking = { el, label };
      ticker = setInterval(() => paintThinking(), 1000);
    } else if (thinking.el.parentNode !== box) box.append(thinking.el);
    if (thinking.step !== step) thinking.text?.remove();
    if (thinking.step !== step) thinking.text = null;
    thinking.step = step;
    thinking.since = Date.parse(since);
    paintThinking();
  }

  /** The model's reply so far, under "Thinking…", until its step arrives. */
  function showText(step, text) {
    if (!thinking || thinking.step !== step) showThinking(step, new Date().toISOString());
    if (!thinking || thinking.step !== step) return;
    if (!thinking.text) {
      thinking.text = document.createElement("blockquote");
      thinking.text.className = "streaming";
      thinking.text.setAttribute("aria-live", "polite");
      thinking.el.append(thinking.text);
    }
    thinking.text.textContent = text;
  }

  function paintThinking() {
    if (!thinking) return;
    const s = Math.max(0, Math.round((Date.now() - thinking.since) / 1000));
    thinking.label.textContent = `${thinking.text ? "Writing" : "Thinking"}… (step ${thinking.step}, ${s} s)`;
  }

  /** Adds a step unless it is shown already; a live one opens, and a long run's older ones fold unless their reader opened them. */
  function addStep(html, live) {
    const box = document.getElementById("run-steps");
    const el = fromHtml(html);
    if (!box || !el || document.getElementById(el.id)) return;
    const n = Number(el.dataset.step);
    box.querySelector(":scope > p:not(.thinking)")?.remove();
    const after = [...box.querySelectorAll(":scope > details.step")].find((d) => Number(d.dataset.step) > n);
    // The "thinking" line may sit in a list the page has since replaced (a replay's side-by-side
    // columns are redrawn whole): only a line in this list marks where steps go.
    const thinkingHere = thinking?.el.parentNode === box ? thinking.el : null;
    box.insertBefore(el, after ?? thinkingHere);
    const all = box.querySelectorAll(":scope > details.step");
    const heading = document.getElementById("steps");
    if (heading?.textContent.startsWith("Steps")) heading.textContent = `Steps (${all.length})`;
    if (!live) return;
    // As the server renders a long run: past FOLD_AFTER steps, all but the last few fold.
    if (all.length > FOLD_AFTER)
      for (const d of [...all].slice(0, -OPEN_AT_END)) if (!d.dataset.opened) d.open = false;
    if (thinking && thinking.step <= n) stopThinking();
  }

  function showProgress(progress) {
    const old = document.getElementById("run-progress");
    const el = progress && fromHtml(progress.html);
    if (old && el) {
      old.replaceWith(el);
      served.set(el, el.outerHTML);
    }
  }

  // A fold its reader opened stays open when newer steps arrive.
  document.addEventListener("click", (e) => {
    const summary = e.target.closest?.("details.step > summary");
    if (summary) summary.parentElement.dataset.opened = "1";
  });

  // ---- the stream ----------------------------------------------------------------------------
  // EventSource reconnects by itself after a dropped connection, sending the last event's id;
  // an answer that is not a stream (a 503 while the database is away) ends it, so this opens
  // it again, from the last event seen, a few times, waiting longer each time.
  let last = main.dataset.liveSince ?? "";
  let events = null;
  let ended = false;
  let retries = 0;
  const data = (e) => {
    last = e.lastEventId || last;
    retries = 0;
    return JSON.parse(e.data);
  };

  function connect() {
    const params = [query, `last_event_id=${encodeURIComponent(last)}`].filter(Boolean).join("&");
    events = new EventSource(`${path}?${params}`);
    events.addEventListener("step", (e) => {
      const d = data(e);
      addStep(d.html, true);
      showProgress(d.progress);
    });
    events.addEventListener("thinking", (e) => {
      const d = data(e);
      showThinking(d.step, d.since);
    });
    events.addEventListener("text", (e) => {
      const d = data(e);
      showText(d.step, d.text);
      paintThinking();
    });
    events.addEventListener("status", (e) => {
      const d = data(e);
      showProgress(d.progress);
      if (!["running", "stopping", "pausing"].includes(d.state)) stopThinking();
      if (ENDED.includes(d.state)) {
        ended = true;
        events.close();
      }
      void refresh();
    });
    events.addEventListener("changed", (e) => {
      data(e);
      void refresh();
    });
    events.addEventListener("error", () => {
      if (ended || events.readyState !== EventSource.CLOSED || retries >= 6) return;
      retries += 1;
      setTimeout(connect, 1000 * 2 ** retries);
    });
  }

  remember(content());
  remember(panel());
  connect();
})();
