// Small helps on every page, none needed: without this script each form still names its
// limits and each secret is still selectable text.
//
// - A field with a limit (`maxlength`, and a line `[data-count-for]` naming it, from the
//   registry's schemas) counts what was typed as it is typed: "1,234 of 20,000 characters".
// - A secret (`.copyable`) and each example beside it (`.copy-blocks pre`) get a Copy button,
//   added here because only a script can copy. Listeners sit on the document, so parts of a
//   page that live.js replaces keep working.
// - A table wider than its card (`.table-wrap`, which scrolls sideways) says so above it:
//   its edge shadow alone (app.css) is easy to miss on a phone.
// - A field meaningful only with another's value (`[data-shown-with]`: an experiment's model
//   when it tries a model) is hidden while that value is not chosen. Without this script every
//   field shows, and the action ignores the ones that do not apply.
(() => {
  const fmt = (n) => n.toLocaleString("en-US");

  function countFor(field) {
    const note = document.querySelector(`[data-count-for="${field.id}"]`);
    if (!note) return;
    const max = Number(note.dataset.max);
    const n = field.value.length;
    note.textContent = `${fmt(n)} of ${fmt(max)} characters${n >= max ? " — the limit" : ""}`;
    note.classList.toggle("near", n >= max * 0.9 && n < max);
    note.classList.toggle("full", n >= max);
  }

  document.addEventListener("input", (e) => {
    if (e.target instanceof HTMLElement && e.target.id) countFor(e.target);
  });

  function showWith(root) {
    for (const field of root.querySelectorAll("[data-shown-with]")) {
      const control = field.closest("form")?.elements.namedItem(field.dataset.shownWith);
      if (!control || !("value" in control)) continue;
      field.hidden = !field.dataset.shownValues.split(" ").includes(control.value);
    }
  }

  document.addEventListener("change", (e) => {
    const form = e.target instanceof Element ? e.target.closest("form") : null;
    if (form) showWith(form);
  });

  /** Copies through the Clipboard API, or (a page served over plain http elsewhere than localhost) a selection. */
  async function copy(text, source) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      const range = document.createRange();
      range.selectNodeContents(source);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      return document.execCommand("copy");
    }
  }

  document.addEventListener("click", async (e) => {
    const button = e.target instanceof Element ? e.target.closest("button.copy") : null;
    const source = button?.previousElementSibling;
    if (!source) return;
    const ok = await copy(source.textContent, source);
    button.textContent = ok ? "Copied" : "Select and copy";
    setTimeout(() => {
      button.textContent = "Copy";
    }, 2000);
  });

  const HINT = "Wider than the screen: scroll the table sideways to see every column →";

  function hintWideTables() {
    for (const wrap of document.querySelectorAll(".table-wrap")) {
      const hint = wrap.previousElementSibling?.classList.contains("scroll-hint")
        ? wrap.previousElementSibling
        : null;
      const wide = wrap.scrollWidth > wrap.clientWidth + 1;
      if (wide && !hint) {
        const p = document.createElement("p");
        p.className = "scroll-hint";
        p.textContent = HINT;
        wrap.before(p);
      } else if (!wide && hint) hint.remove();
    }
  }

  let resizing = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(hintWideTables, 150);
  });

  function ready() {
    hintWideTables();
    showWith(document);
    for (const source of document.querySelectorAll(".copyable, .copy-blocks pre")) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "copy";
      button.textContent = "Copy";
      source.after(button);
    }
    for (const note of document.querySelectorAll("[data-count-for]")) {
      const field = document.getElementById(note.dataset.countFor);
      if (field?.value) countFor(field);
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();
})();
