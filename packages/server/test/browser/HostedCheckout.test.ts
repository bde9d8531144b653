/**
 * The hosted checkout in Chromium at a phone's width (390 px) and a desktop's (issue 22 §4): the application's name,
 * the customer prefilled, the payment's language, nothing wider than the screen, and a keyboard focus one can see;
 * and an operator's branding: the logo (served here over http on 127.0.0.1, which the logo rule allows for loopback
 * outside production) loaded through the page's CSP, bounded, above the name, fetched without a referrer; the brand
 * colour on the pay button with the text colour the core picked, and a focus outline that still shows on a pale
 * brand. Screenshots go to `artifacts/dashboard/`.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkAccessible, launch, screenshot } from "../support/Browser.ts"
import { operatorRequest } from "../support/OperatorRequests.ts"
import { type RunningServer, startServer, type TestApplication } from "../support/TestServer.ts"

const customer = { name: "Sanne de Vries", email: "sanne@example.nl", phone: "+31 6 1234 5678" }

/** A wide logo (240 × 80), so the page's bound on its height shows. */
const logoSvg = `<svg xmlns="http://www.w3.org/2000/svg" width="240" height="80" viewBox="0 0 240 80">
<rect width="240" height="80" rx="16" fill="#0a7d4f"/><circle cx="40" cy="40" r="22" fill="#ffd500"/>
<rect x="76" y="26" width="140" height="12" rx="6" fill="#ffffff"/><rect x="76" y="46" width="96" height="8" rx="4" fill="#cde8dc"/>
</svg>`

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
  let branded: TestApplication
  let pale: TestApplication
  let browser: Browser
  let logoServer: Server
  const logoRequests: Array<IncomingHttpHeaders> = []
  const contexts: Array<BrowserContext> = []

  beforeAll(async () => {
    logoServer = createServer((request, response) => {
      logoRequests.push(request.headers)
      response.writeHead(200, { "content-type": "image/svg+xml", "cache-control": "no-store" }).end(logoSvg)
    })
    await new Promise<void>((resolve) => logoServer.listen(0, "127.0.0.1", resolve))
    const logoUrl = `http://127.0.0.1:${(logoServer.address() as AddressInfo).port}/brand/logo.svg`
    server = await startServer("pglite")
    shop = await server.createApplication({ name: "Bloemenwinkel Het Zonnige Hoekje", methods: ["ideal"] })
    // Two methods: the page adds a radio group (one Tab stop; the arrow keys move within it).
    florist = await server.createApplication({ name: "Fleuriste Les Quatre Saisons", methods: ["card", "ideal"] })
    // Set as an operator sets them: through the operator API, so the stored values are what its rules let through.
    branded = await server.createApplication({ name: "Tuincentrum De Groene Vinger", methods: ["ideal"] })
    pale = await server.createApplication({ name: "Zonnebloem Cadeaus", methods: ["ideal"] })
    for (const [application, colour] of [
      [branded, "#0A7D4F"],
      [pale, "#ffd500"]
    ] as const) {
      const set = await operatorRequest(server, `/applications/${application.application.id}`, {
        method: "PATCH",
        body: { checkout_logo_url: logoUrl, checkout_brand_color: colour }
      })
      expect(set.status, set.text).toBe(200)
    }
    browser = await launch()
  }, 120_000)

  afterAll(async () => {
    for (const context of contexts) await context.close()
    await browser?.close()
    await server?.close()
    await new Promise((resolve) => logoServer?.close(resolve))
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
      await checkAccessible(withChoice)
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

  for (const width of [390, 1280]) {
    it(`at ${width} px: the operator's logo above the name, bounded, and the brand colour on the pay button`, async () => {
      const before = logoRequests.length
      const id = await createPayment({ locale: "nl-NL", customer }, branded.testKey)
      const page = await openAt(width, id)
      const logo = page.locator("img.brand-logo")
      await expect.poll(() => logo.evaluate((image: HTMLImageElement) => image.complete)).toBe(true)
      await screenshot(page, `checkout-${width}-branded`)
      // Loaded, so the CSP let exactly this origin through (a blocked image has no natural size).
      const shown = await logo.evaluate((image: HTMLImageElement) => {
        const box = image.getBoundingClientRect()
        const heading = document.querySelector("h1")?.getBoundingClientRect()
        return {
          naturalWidth: image.naturalWidth,
          alt: image.alt,
          height: box.height,
          width: box.width,
          right: box.right,
          aboveHeading: heading !== undefined && box.bottom <= heading.top
        }
      })
      expect(shown.naturalWidth).toBeGreaterThan(0)
      expect(shown.alt).toBe("Tuincentrum De Groene Vinger")
      expect(shown.height).toBeLessThanOrEqual(64)
      expect(shown.width / shown.height).toBeCloseTo(3, 1)
      expect(shown.aboveHeading).toBe(true)
      expect(logoRequests.length).toBeGreaterThan(before)
      expect(logoRequests.at(-1)?.referer, "the logo's host learns nothing of the checkout").toBeUndefined()

      const button = await page.getByRole("button", { name: "Betalen", exact: true }).evaluate((element) => ({
        background: getComputedStyle(element).backgroundColor,
        color: getComputedStyle(element).color
      }))
      expect(button).toEqual({ background: "rgb(10, 125, 79)", color: "rgb(255, 255, 255)" })
      expect(contrast(button.color, button.background)).toBeGreaterThanOrEqual(4.5)
      await checkAccessible(page)
      const layout = await overflowing(page)
      expect(layout.wide, `elements past the right edge at ${width} px`).toEqual([])
      expect(layout.scrollWidth).toBeLessThanOrEqual(layout.width)
    })
  }

  it("a pale brand: near-black text on the button, and a focus outline of at least 3:1 on the card, at 390 px", async () => {
    const id = await createPayment({ locale: "en", customer }, pale.testKey)
    const page = await openAt(390, id)
    await expect
      .poll(() => page.locator("img.brand-logo").evaluate((image: HTMLImageElement) => image.naturalWidth))
      .toBeGreaterThan(0)
    const button = await page.getByRole("button", { name: "Pay", exact: true }).evaluate((element) => ({
      background: getComputedStyle(element).backgroundColor,
      color: getComputedStyle(element).color
    }))
    expect(button.background).toBe("rgb(255, 213, 0)")
    expect(contrast(button.color, button.background)).toBeGreaterThanOrEqual(4.5)
    const focus = await focusByKeyboard(page, "Pay")
    await screenshot(page, "checkout-390-branded-pale-focus")
    expect(focus.focusVisible).toBe(true)
    expect(focus.outlineStyle).toBe("solid")
    expect(
      contrast(focus.outlineColor, focus.background),
      `${focus.outlineColor} on ${focus.background}`
    ).toBeGreaterThanOrEqual(3)
  })
})
