/**
 * The hosted checkout as the customer reads it (issue 22 §4): the application's name, the payment's `customer`
 * prefilled, the payment's `locale` spoken (English, Dutch, German, French; English otherwise, with `lang` to match),
 * and everything the application wrote escaped.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as CheckoutMessages from "../src/pages/CheckoutMessages.ts"
import { escapeText } from "../src/pages/Html.ts"
import { databases, type RunningServer, startServer, type TestApplication } from "./support/TestServer.ts"

/** A shop name and customer that would be markup if the page did not escape them. */
const hostileShop = `Bakker "<b>Jansen</b>" & Zn`
const hostileCustomer = {
  name: `<img src=x onerror="alert(1)"> O'Brien`,
  email: "o.brien+shop@example.com",
  phone: "+31 20 123 4567"
}

describe("the checkout's message table", () => {
  it("picks the table by the locale's language, keeps the locale as `lang`, and falls back to English", () => {
    expect(CheckoutMessages.forLocale("nl-BE")).toMatchObject({ lang: "nl-BE", messages: { pay: "Betalen" } })
    expect(CheckoutMessages.forLocale("de")).toMatchObject({ lang: "de", messages: { pay: "Bezahlen" } })
    expect(CheckoutMessages.forLocale("fr-FR")).toMatchObject({ lang: "fr-FR", messages: { pay: "Payer" } })
    expect(CheckoutMessages.forLocale("es-ES")).toMatchObject({ lang: "en", messages: { pay: "Pay" } })
    expect(CheckoutMessages.forLocale(undefined)).toMatchObject({ lang: "en", messages: { pay: "Pay" } })
    // Not an own key of the table: no prototype lookups.
    expect(CheckoutMessages.forLocale("constructor").lang).toBe("en")
  })

  it("translates every message in every language but English", () => {
    const english = CheckoutMessages.forLocale("en").messages
    for (const language of ["nl", "de", "fr"]) {
      const { messages } = CheckoutMessages.forLocale(language)
      for (const key of Object.keys(english) as Array<keyof CheckoutMessages.CheckoutMessages>) {
        expect(messages[key], `${language}.${key}`).toBeTruthy()
      }
      // Words that are the same in two languages (Name, Shop, Testmodus) are fine; most are not.
      const same = (Object.keys(english) as Array<keyof CheckoutMessages.CheckoutMessages>).filter(
        (key) => JSON.stringify(messages[key]) === JSON.stringify(english[key])
      )
      expect(same.length, `${language}: ${same.join(", ")}`).toBeLessThanOrEqual(2)
    }
    expect(CheckoutMessages.languages).toEqual(["en", "nl", "de", "fr"])
  })
})

describe.each(databases)("the hosted checkout's words on %s", (database) => {
  let server: RunningServer
  let shop: TestApplication
  beforeAll(async () => {
    server = await startServer(database)
    shop = await server.createApplication({ name: hostileShop, methods: ["card", "ideal"] })
  })
  afterAll(() => server.close())

  const createPayment = async (body: Record<string, unknown> = {}) => {
    const response = await server.request("/api/v1/payments", {
      method: "POST",
      key: shop.testKey,
      body: { amount: 1999, currency: "EUR", method: "card", order_reference: `order-${crypto.randomUUID()}`, ...body }
    })
    expect(response.status, response.text).toBe(201)
    return response.body as { id: string }
  }

  const open = async (id: string) => {
    const response = await fetch(`${server.baseUrl}/checkout/${id}`)
    expect(response.status).toBe(200)
    const html = await response.text()
    return {
      html,
      cookie: (response.headers.get("set-cookie") ?? "").split(";")[0] ?? "",
      csrf: /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ""
    }
  }

  const post = (id: string, form: { cookie: string; csrf: string }, fields: Record<string, string>) =>
    fetch(`${server.baseUrl}/checkout/${id}`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: form.cookie, origin: server.baseUrl },
      body: new URLSearchParams({ csrf: form.csrf, ...fields }).toString()
    })

  it("names the application, escaped, in the heading, the summary and the title", async () => {
    const { id } = await createPayment()
    const { html } = await open(id)
    expect(html).toContain(`<h1>${escapeText(hostileShop)}</h1>`)
    expect(html).toContain(`<dd>${escapeText(hostileShop)}</dd>`)
    expect(html).toContain(`<title>${escapeText(hostileShop)} — €19.99 — Kassa</title>`)
    expect(html).not.toContain("<b>Jansen</b>")
  })

  it("prefills the payer form from the payment's customer, escaped", async () => {
    const { id } = await createPayment({ customer: hostileCustomer })
    const { html } = await open(id)
    expect(html).toContain(`value="${escapeText(hostileCustomer.name)}"`)
    expect(html).toContain(`value="${escapeText(hostileCustomer.email)}"`)
    expect(html).toContain(`value="${escapeText(hostileCustomer.phone)}"`)
    expect(html).not.toContain("<img")
    // Without a customer the fields start empty.
    const plain = await open((await createPayment()).id)
    expect(plain.html).toMatch(/id="name" name="name" type="text" value=""/)
  })

  it.each([
    ["en", "en", ["Pay", "Fail", "Let it expire", "Payment method", "Test mode", "E-mail (optional)"]],
    ["nl-NL", "nl-NL", ["Betalen", "Laten mislukken", "Laten verlopen", "Betaalmethode", "Testmodus", "Naam"]],
    ["de", "de", ["Bezahlen", "Fehlschlagen lassen", "Ablaufen lassen", "Zahlungsart", "Telefon (optional)"]],
    ["fr", "fr", ["Payer", "Faire échouer", "Laisser expirer", "Moyen de paiement", "Mode test", "Nom"]],
    ["es", "en", ["Pay", "Fail", "Let it expire", "Payment method"]]
  ] as const)("speaks locale %s with lang=%s", async (locale, lang, words) => {
    const { id } = await createPayment({ locale })
    const { html } = await open(id)
    expect(html).toContain(`<html lang="${lang}">`)
    for (const word of words) expect(html).toContain(escapeText(word))
  })

  it("gives validation errors and the outcome in the payment's language", async () => {
    const french = await createPayment({ locale: "fr" })
    const form = await open(french.id)
    const refused = await post(french.id, form, { action: "pay", name: "", email: "nope" })
    expect(refused.status).toBe(422)
    const page = await refused.text()
    expect(page).toContain(escapeText("Saisissez le nom du payeur."))
    expect(page).toContain(escapeText("Saisissez une adresse e-mail, ou laissez le champ vide."))

    const german = await createPayment({ locale: "de-DE" })
    const germanForm = await open(german.id)
    const failed = await post(german.id, germanForm, { action: "fail", name: "Max" })
    expect(failed.status).toBe(200)
    const outcome = await failed.text()
    expect(outcome).toContain('<html lang="de-DE">')
    expect(outcome).toContain("<h1>Zahlung fehlgeschlagen</h1>")
    expect(outcome).toContain(`<dd>${escapeText(hostileShop)}</dd>`)
  })
})
