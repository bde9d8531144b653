/**
 * The hosted checkout in Chromium at a phone's width (390 px) and a desktop's (issue 22 §4): the application's name,
 * the customer prefilled, the payment's language, nothing wider than the screen, and a keyboard focus one can see.
 * Screenshots go to `artifacts/dashboard/`.
 */
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkAccessible, launch, screenshot } from "../support/Browser.ts"
import { type RunningServer, startServer, type TestApplication } from "../support/TestServer.ts"

const customer = { name: "Sanne de Vries", email: "sanne@example.nl", phone: "+31 6 1234 5678" }

const channels = (colour: string): [number, number, number, number] => {
  const [r = 0, g = 0, b = 0, a = 1] = (colour.match(/\d+(\.\d+)?/g) ?? []).map(Number)
  return [r, g, b, a]
}

/**
 * WCAG's contrast ratio of a `rgb()`/`rgba()` foreground on an opaque background; a translucent foreground is
 * composited on the background first, as the eye sees it.
 */
const contrast = (foreground: string, background: string): number => {
  const [br, bg, bb] = channels(background)
  const [fr, fg, fb, alpha] = channels(foreground)
  const seen = [fr * alpha + br * (1 - alpha), fg * alpha + bg * (1 - alpha), fb * alpha + bb * (1 - alpha)]
  const luminance = (rgb: ReadonlyArray<number>) => {
    const [r = 0, g = 0, b = 0] = rgb.map((channel) => {
      const c = channel / 255
      return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
    })
    return 0.2126 * r + 0.7152 * g + 0.0722 * b
  }
  const [light, dark] = [luminance(seen), luminance([br, bg, bb])].sort((x, y) => y - x) as [number, number]
  return (light + 0.05) / (dark + 0.05)
}

describe("the hosted checkout in Chromium", () => {
  let server: RunningServer
  let shop: TestApplication
  let florist: TestApplication
  let browser: Browser
  const contexts: Array<BrowserContext> = []

  beforeAll(async () => {
    server = await startServer("pglite")
    shop = await server.createApplication({ name: "Bloemenwinkel Het Zonnige Hoekje", methods: ["ideal"] })
    // Two methods: the page adds a radio group (which Tab enters once, so checkAccessible is not run on it).
    florist = await server.createApplication({ name: "Fleuriste Les Quatre Saisons", methods: ["card", "ideal"] })
    browser = await launch()
  }, 120_000)

  afterAll(async () => {
    for (const context of contexts) await context.close()
    await browser?.close()
    await server?.close()
  })

  const createPayment = async (body: Record<string, unknown>, key = shop.testKey) => {
    const created = await server.request("/api/v1/payments", {
      method: "POST",
      key,
      body: {
        amount: 4_250,
        currency: "EUR",
        method: "ideal",
        order_reference: `flowers-${crypto.randomUUID()}`,
        description: "Boeket tulpen, extra groot, met kaartje en bezorging aan huis",
        ...body
      }
    })
    expect(created.status, created.text).toBe(201)
    return (created.body as { id: string }).id
  }

  const openAt = async (width: number, id: string): Promise<Page> => {
    const context = await browser.newContext({ viewport: { width, height: 844 } })
    context.setDefaultTimeout(10_000)
    contexts.push(context)
    const page = await context.newPage()
    const response = await page.goto(`${server.baseUrl}/checkout/${id}`)
    expect(response?.status()).toBe(200)
    return page
  }

  /** What sticks out past the right edge of the viewport (none may, so nothing scrolls sideways). */
  const overflowing = (page: Page) =>
    page.evaluate(() => {
      const width = document.documentElement.clientWidth
      const wide = [...document.querySelectorAll("body *")]
        .filter((element) => element.getBoundingClientRect().right > width + 0.5)
        .map((element) => element.outerHTML.slice(0, 80))
      return { scrollWidth: document.documentElement.scrollWidth, width, wide }
    })

  /** Tabs until `name`'s button has the focus, then reads its outline as the browser draws it. */
  const focusByKeyboard = async (page: Page, name: string) => {
    const button = page.getByRole("button", { name, exact: true })
    for (let press = 0; press < 20; press++) {
      await page.keyboard.press("Tab")
      if (await button.evaluate((element) => element === document.activeElement)) break
    }
    return button.evaluate((element) => {
      const style = getComputedStyle(element)
      const card = element.closest(".card") ?? document.body
      return {
        focusVisible: element.matches(":focus-visible"),
        outlineStyle: style.outlineStyle,
        outlineWidth: Number.parseFloat(style.outlineWidth),
        outlineColor: style.outlineColor,
        background: getComputedStyle(card).backgroundColor
      }
    })
  }

  for (const width of [390, 1280]) {
    it(`at ${width} px: the shop's name, the customer prefilled, in Dutch, nothing wider than the screen`, async () => {
      const id = await createPayment({ locale: "nl-NL", customer })
      const page = await openAt(width, id)
      await screenshot(page, `checkout-${width}-nl`)
      await checkAccessible(page)
      expect(await page.evaluate(() => document.documentElement.lang)).toBe("nl-NL")
      expect(await page.locator("h1").textContent()).toBe("Bloemenwinkel Het Zonnige Hoekje")
      expect(await page.title()).toContain("Bloemenwinkel Het Zonnige Hoekje")
      expect(await page.getByLabel("Naam").inputValue()).toBe(customer.name)
      expect(await page.getByLabel("E-mail (optioneel)").inputValue()).toBe(customer.email)
      expect(await page.getByLabel("Telefoon (optioneel)").inputValue()).toBe(customer.phone)
      const layout = await overflowing(page)
      expect(layout.wide, `elements past the right edge at ${width} px`).toEqual([])
      expect(layout.scrollWidth).toBeLessThanOrEqual(layout.width)

      const withChoice = await openAt(width, await createPayment({ locale: "fr-BE", customer }, florist.testKey))
      await screenshot(withChoice, `checkout-${width}-fr-methods`)
      expect(await withChoice.getByRole("group", { name: "Moyen de paiement" }).isVisible()).toBe(true)
      const choiceLayout = await overflowing(withChoice)
      expect(choiceLayout.wide, `elements past the right edge at ${width} px`).toEqual([])
      expect(choiceLayout.scrollWidth).toBeLessThanOrEqual(choiceLayout.width)
    })
  }

  it("shows the keyboard focus with an outline of at least 3:1 against the card, at 390 px", async () => {
    const id = await createPayment({ locale: "de-DE", customer })
    const page = await openAt(390, id)
    const focus = await focusByKeyboard(page, "Bezahlen")
    await screenshot(page, "checkout-390-de-focus")
    expect(focus.focusVisible).toBe(true)
    expect(focus.outlineStyle).toBe("solid")
    expect(focus.outlineWidth).toBeGreaterThanOrEqual(2)
    expect(
      contrast(focus.outlineColor, focus.background),
      `${focus.outlineColor} on ${focus.background}`
    ).toBeGreaterThanOrEqual(3)
  })

  it("at a desktop width: a French customer pays with the keyboard and sees the outcome in French", async () => {
    const id = await createPayment({ locale: "fr", customer: { name: null, email: null, phone: null } })
    const page = await openAt(1280, id)
    expect(await page.evaluate(() => document.documentElement.lang)).toBe("fr")
    await page.getByLabel("Nom").fill("Camille Martin")
    await screenshot(page, "checkout-1280-fr")
    const focus = await focusByKeyboard(page, "Payer")
    expect(focus.focusVisible).toBe(true)
    await page.keyboard.press("Enter")
    await expect.poll(() => page.locator("h1").textContent()).toBe("Payé")
    await screenshot(page, "checkout-1280-fr-paid")
    expect(await page.locator("main").textContent()).toContain("Bloemenwinkel Het Zonnige Hoekje")
    const paid = await server.request(`/api/v1/payments/${id}`, { key: shop.testKey })
    expect(paid.body).toMatchObject({ status: "paid", payer: { name: "Camille Martin", email: null } })
  })
})
