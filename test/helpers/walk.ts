// The newcomer's walkthrough (test/browser-walk-*.test.ts): the same journeys at a laptop's
// width and a phone's, each page checked for sideways scrolling and saved as a screenshot
// under tmp/walk/ (git-ignored) for a person to look at.
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Browser, Locator, Page } from "playwright-core";
import { expect } from "vitest";
import { watchErrors } from "./browser.ts";

export const WIDTHS = [1280, 390] as const;
export type Width = (typeof WIDTHS)[number];

const DIR = fileURLToPath(new URL("../../tmp/walk/", import.meta.url));

export interface Walker {
  page: Page;
  width: Width;
  /** Server errors and page crashes seen so far: must stay empty. */
  errors: string[];
  close(): Promise<void>;
}

export async function walker(browser: Browser, width: Width): Promise<Walker> {
  const context = await browser.newContext({ viewport: { width, height: width === 390 ? 844 : 900 } });
  const page = await context.newPage();
  const errors = watchErrors(page);
  // Every request a page makes, the icon included: a 404 behind a page is a defect too.
  page.on("response", (r) => {
    if (r.status() === 404 && r.request().resourceType() !== "document") errors.push(`404 ${r.url()}`);
  });
  return { page, width, errors, close: () => context.close() };
}

/**
 * A journey in a fresh browser context at `width`: afterwards no server error, crash or
 * missing file was seen on the way (but those `expected` matches, caused on purpose).
 */
export async function walking(
  browser: Browser,
  width: Width,
  journey: (w: Walker) => Promise<void>,
  expected?: RegExp,
): Promise<void> {
  const walk = await walker(browser, width);
  try {
    await journey(walk);
    expect(walk.errors.filter((e) => !expected?.test(e))).toEqual([]);
  } finally {
    await walk.close();
  }
}

/**
 * The page as a person sees it now: nothing wider than the screen (no sideways scroll), no
 * field asking them to type an id, and a full-page screenshot `<dir><width>-<name>.png`
 * (`tmp/walk/` unless a walk keeps its own, as issue 46's does under /tmp/shots/).
 */
export async function look(w: Walker, name: string, dir = DIR): Promise<void> {
  mkdirSync(dir, { recursive: true });
  await w.page.screenshot({ path: `${dir}${w.width}-${name}.png`, fullPage: true });
  // What sticks out, named, so a failure says where to look.
  const wide = await w.page.evaluate<{ scroll: number; width: number; over: string[] }>(`(() => {
    const width = window.innerWidth;
    const over = [...document.querySelectorAll("body *")]
      .filter((el) => el.getBoundingClientRect().right > width + 1)
      .slice(0, 3)
      .map((el) => el.tagName.toLowerCase() + "." + el.className);
    return { scroll: document.documentElement.scrollWidth, width, over };
  })()`);
  expect(
    wide.scroll,
    `${name} at ${w.width}px scrolls sideways: ${wide.over.join(", ")}`,
  ).toBeLessThanOrEqual(wide.width);
  const typedIds = w.page.locator(
    'input:not([type=hidden])[name="id"], input:not([type=hidden])[name$="_id"], input:not([type=hidden])[name="reply_to"]',
  );
  expect(await typedIds.count(), `${name} asks to type an id`).toBe(0);
}

/** Opens the menu on a phone (a <details> folded behind "Menu"); on a wide screen it is always there. */
export async function menuLink(w: Walker, name: string | RegExp): Promise<Locator> {
  if (w.width === 390) {
    const menu = w.page.locator("details.menu");
    if ((await menu.getAttribute("open")) === null) await menu.locator("summary").click();
  }
  return w.page.locator("header nav.nav").getByRole("link", { name });
}

/** The message shown at a form field, found by the field's label. */
export async function fieldError(form: Locator, label: string): Promise<string> {
  const field = form.locator(".field.has-error", { has: form.page().locator("label", { hasText: label }) });
  return ((await field.locator(".field-error").textContent()) ?? "").trim();
}

/** Clicks a destructive button: the page asks first (nothing done yet), then "Yes, …" does it. */
export async function confirmThrough(w: Walker, button: Locator, shot: string, yes: string | RegExp) {
  await button.click();
  const ask = w.page.locator("section.confirm");
  await ask.waitFor();
  await look(w, shot);
  await ask.getByRole("button", { name: yes }).click();
}
