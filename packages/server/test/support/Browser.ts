/**
 * Debian's Chromium driven by playwright-core (which never downloads a browser). Launched headless with the flags
 * this machine needs (no sandbox as root, no background networking: the network is closed and Chromium would keep
 * dialling Google). Screenshots go to `artifacts/dashboard/` at the repository root, one per page visited.
 */
import { existsSync, mkdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { type Browser, chromium, type Page } from "playwright-core"
import { expect } from "vitest"

/** The Chromium binary: `KASSA_CHROMIUM`, else Debian's. */
export const chromiumPath = (): string | undefined => {
  const configured = process.env.KASSA_CHROMIUM
  if (configured !== undefined && configured.length > 0) return configured
  return existsSync("/usr/bin/chromium") ? "/usr/bin/chromium" : undefined
}

export const screenshotDir = fileURLToPath(new URL("../../../../artifacts/dashboard/", import.meta.url))

export const launch = async (): Promise<Browser> => {
  const executablePath = chromiumPath()
  if (executablePath === undefined) throw new Error("No Chromium: install Debian's chromium or set KASSA_CHROMIUM")
  return chromium.launch({
    executablePath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage"
    ]
  })
}

/** Saves a full-page screenshot named after the page, for people to look at. */
export const screenshot = async (page: Page, name: string) => {
  mkdirSync(screenshotDir, { recursive: true })
  await page.screenshot({ path: `${screenshotDir}${name}.png`, fullPage: true })
}

/**
 * What makes a page usable without a mouse and with a screen reader, checked in the page itself:
 * every visible form field has a label (a `<label for>`, a wrapping label, or aria-label/labelledby), and
 * pressing Tab reaches every visible link, button and field, in order, without a trap.
 */
export const checkAccessible = async (page: Page) => {
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll("input, select, textarea")]
      .filter((element) => {
        const input = element as HTMLInputElement
        // Not shown, so not something a person fills in (e.g. a username kept for password managers).
        if (input.type === "hidden" || input.getClientRects().length === 0) return false
        const labelled =
          (input.labels !== null && input.labels.length > 0) ||
          input.hasAttribute("aria-label") ||
          input.hasAttribute("aria-labelledby")
        return !labelled
      })
      .map((element) => element.outerHTML.slice(0, 120))
  )
  expect(unlabelled, `fields without a label on ${page.url()}`).toEqual([])

  const focusable = await page.evaluate(() => {
    const visible = (element: Element) => {
      const box = element.getBoundingClientRect()
      return box.width > 0 && box.height > 0 && getComputedStyle(element).visibility !== "hidden"
    }
    const all = [...document.querySelectorAll("a[href], button, input:not([type=hidden]), select, textarea")]
    // Tab enters a radio group once (arrow keys move within it): its buttons share one stop.
    for (const [index, element] of all.entries()) {
      const radio = element instanceof HTMLInputElement && element.type === "radio" && element.name !== ""
      element.setAttribute("data-focus-index", radio ? `radio ${element.name}` : String(index))
    }
    const stops = [...new Set(all.filter(visible).map((element) => element.getAttribute("data-focus-index") ?? ""))]
    // A date field is three Tab stops in Chromium (day, month, year): the walk needs that many more presses.
    const extra = all.filter((element) => element instanceof HTMLInputElement && element.type === "date").length * 2
    return { stops, extra }
  })
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
  await page.locator("body").focus()
  const reached = new Set<string>()
  for (let press = 0; press < focusable.stops.length + focusable.extra + 3; press++) {
    await page.keyboard.press("Tab")
    const index = await page.evaluate(() => document.activeElement?.getAttribute("data-focus-index") ?? null)
    if (index !== null) reached.add(index)
  }
  const missed = focusable.stops.filter((index) => !reached.has(index))
  const described = await page.evaluate(
    (indexes) =>
      indexes.map(
        (index) => document.querySelector(`[data-focus-index="${CSS.escape(index)}"]`)?.outerHTML.slice(0, 100) ?? index
      ),
    missed
  )
  expect(described, `elements Tab never reaches on ${page.url()}`).toEqual([])
}
