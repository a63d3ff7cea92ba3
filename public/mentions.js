// @-autocomplete in every composer, none needed: without this script a text area is a text
// area, and an @handle typed in full mentions as it always did.
//
// A text area that takes mentions carries `data-mentions`, the address of who its writer may
// mention there (/mentionable.json?studio=…, filtered by the server with the same rule that
// decides who is notified and which agent wakes). Typing `@` and the start of a handle or a
// name lists them under the field; ArrowDown/ArrowUp move, Enter or Tab puts the handle in,
// Escape closes the list and leaves the text as typed. A combobox as WAI-ARIA describes one:
// the field names the list and its active option, a live line says how many there are.
// Listeners sit on the document, so composers that live.js replaces keep working.
(() => {
  /** `@` and what follows it up to the caret, when it starts a word (not an email's `a@b`). */
  const TYPED = /(^|[^\w@`])@([a-z0-9_-]{0,32})$/i;
  const state = new WeakMap();
  let serial = 0;

  function setup(field) {
    if (state.has(field)) return state.get(field);
    serial += 1;
    const list = document.createElement("ul");
    list.className = "mention-list";
    list.id = `mentions-${serial}`;
    list.setAttribute("role", "listbox");
    list.setAttribute("aria-label", "People and agents you can mention");
    list.hidden = true;
    const status = document.createElement("p");
    status.className = "mention-status";
    status.setAttribute("role", "status");
    field.after(list, status);
    field.setAttribute("role", "combobox");
    field.setAttribute("aria-autocomplete", "list");
    field.setAttribute("aria-controls", list.id);
    field.setAttribute("aria-expanded", "false");
    const s = { list, status, items: [], active: 0, start: -1, asked: null, timer: 0 };
    state.set(field, s);
    return s;
  }

  function close(field, s) {
    s.list.hidden = true;
    s.list.replaceChildren();
    s.items = [];
    s.start = -1;
    field.setAttribute("aria-expanded", "false");
    field.removeAttribute("aria-activedescendant");
  }

  function show(field, s) {
    s.list.replaceChildren(
      ...s.items.map((entry, index) => {
        const option = document.createElement("li");
        option.id = `${s.list.id}-${index}`;
        option.setAttribute("role", "option");
        option.setAttribute("aria-selected", String(index === s.active));
        option.dataset.handle = entry.handle;
        const handle = document.createElement("strong");
        handle.textContent = `@${entry.handle}`;
        const about = document.createElement("span");
        const what =
          entry.kind === "agent" ? ` · AI agent${entry.description ? ` — ${entry.description}` : ""}` : "";
        about.textContent = ` ${entry.name}${what}`;
        option.append(handle, about);
        return option;
      }),
    );
    const open = s.items.length > 0;
    s.list.hidden = !open;
    field.setAttribute("aria-expanded", String(open));
    if (open) field.setAttribute("aria-activedescendant", `${s.list.id}-${s.active}`);
    else field.removeAttribute("aria-activedescendant");
    s.status.textContent = open
      ? `${s.items.length} to mention: arrows to choose, Enter to put it in`
      : "Nobody to mention by that name here";
  }

  async function ask(field, s, prefix) {
    const url = new URL(field.dataset.mentions, location.href);
    url.searchParams.set("q", prefix);
    s.asked?.abort();
    s.asked = new AbortController();
    try {
      const res = await fetch(url, { headers: { Accept: "application/json" }, signal: s.asked.signal });
      if (!res.ok) return close(field, s);
      const body = await res.json();
      s.items = Array.isArray(body.mentionable) ? body.mentionable : [];
      s.active = 0;
      show(field, s);
    } catch {
      // Aborted by the next keystroke, or offline: the field works as plain text.
    }
  }

  function typedAt(field) {
    if (field.selectionStart !== field.selectionEnd) return null;
    const match = TYPED.exec(field.value.slice(0, field.selectionStart));
    return match ? { start: field.selectionStart - match[2].length - 1, prefix: match[2] } : null;
  }

  function choose(field, s, index) {
    const entry = s.items[index];
    if (!entry || s.start < 0) return;
    const caret = field.selectionStart;
    const text = `@${entry.handle} `;
    field.setRangeText(text, s.start, caret, "end");
    close(field, s);
    field.dispatchEvent(new Event("input", { bubbles: true }));
    field.focus();
  }

  const composer = (target) =>
    target instanceof HTMLTextAreaElement && target.dataset.mentions ? target : null;

  document.addEventListener("input", (e) => {
    const field = composer(e.target);
    if (!field) return;
    const s = setup(field);
    const typed = typedAt(field);
    if (!typed) return close(field, s);
    s.start = typed.start;
    clearTimeout(s.timer);
    s.timer = setTimeout(() => ask(field, s, typed.prefix), 120);
  });

  document.addEventListener("keydown", (e) => {
    const field = composer(e.target);
    const s = field && state.get(field);
    if (!s || s.list.hidden || !s.items.length) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      const step = e.key === "ArrowDown" ? 1 : -1;
      s.active = (s.active + step + s.items.length) % s.items.length;
      show(field, s);
    } else if (e.key === "Enter" || e.key === "Tab") {
      e.preventDefault();
      choose(field, s, s.active);
    } else if (e.key === "Escape") {
      e.preventDefault();
      close(field, s);
    }
  });

  // mousedown, not click: the field keeps its focus and caret.
  document.addEventListener("mousedown", (e) => {
    const option = e.target instanceof Element ? e.target.closest(".mention-list [role=option]") : null;
    if (!option) return;
    const field = option.parentElement.previousElementSibling;
    const s = field && state.get(field);
    if (!s) return;
    e.preventDefault();
    choose(
      field,
      s,
      s.items.findIndex((entry) => entry.handle === option.dataset.handle),
    );
  });

  document.addEventListener("focusout", (e) => {
    const field = composer(e.target);
    const s = field && state.get(field);
    if (s) setTimeout(() => document.activeElement !== field && close(field, s), 150);
  });
})();
