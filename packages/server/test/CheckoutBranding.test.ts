/**
 * The hosted checkout's branding (issue 22 §4) end to end: the operator sets, reads back and clears an application's
 * `checkout_logo_url` and `checkout_brand_color` (API and dashboard form, audited); bad values are 422
 * `validation_failed` naming the field and change nothing; the checkout shows the logo (named, bounded, no referrer)
 * and the colour, and its Content-Security-Policy allows images from exactly the logo's origin — and is unchanged for
 * an application without one. A stored value that does not pass the core's rule is never rendered.
 */
import { CheckoutBranding, OperatorSettings } from "@kassa/core"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import { databases, type RunningServer, startServer, type TestApplication } from "./support/TestServer.ts"

/** The checkout's CSP without a logo: what every checkout page sent before branding existed. */
const plainCsp =
  "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

const logoUrl = "https://cdn.shop.example:8443/brand/logo.svg"

interface ApplicationBody {
  readonly id: string
  readonly name: string
  readonly status: string
  readonly webhook_url: string | null
  readonly checkout_logo_url: string | null
  readonly checkout_brand_color: string | null
}

interface ErrorBody {
  readonly error: { readonly code: string; readonly fields: Record<string, Array<string>> }
}

describe.each(databases)("checkout branding on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  const admin = (path: string, init: Parameters<typeof operatorRequest>[2] = {}) => operatorRequest(server, path, init)

  const createViaApi = async (body: Record<string, unknown>) => {
    const created = await admin("/applications", { method: "POST", body: { name: "Branded shop", ...body } })
    expect(created.status, created.text).toBe(201)
    return (created.body as { application: ApplicationBody }).application
  }

  const patch = (id: string, body: Record<string, unknown>) => admin(`/applications/${id}`, { method: "PATCH", body })

  const checkout = async (shop: TestApplication) => {
    const created = await server.request("/api/v1/payments", {
      method: "POST",
      key: shop.testKey,
      body: { amount: 1999, currency: "EUR", method: "card", order_reference: `order-${crypto.randomUUID()}` }
    })
    expect(created.status, created.text).toBe(201)
    const id = (created.body as { id: string }).id
    const page = await fetch(`${server.baseUrl}/checkout/${id}`)
    expect(page.status).toBe(200)
    return { id, html: await page.text(), csp: page.headers.get("content-security-policy") }
  }

  it("an application without branding shows null for both, and its checkout and CSP are as before", async () => {
    const application = await createViaApi({})
    expect(application).toMatchObject({ checkout_logo_url: null, checkout_brand_color: null })
    const shop = await server.createApplication({ name: "Plain shop" })
    const { html, csp } = await checkout(shop)
    expect(csp).toBe(plainCsp)
    expect(html).not.toContain("<img")
    expect(html).not.toContain("button.primary { background: #")
    expect(html.match(/<style>/g)).toHaveLength(1)
  })

  it("sets, reads back and clears the logo and the colour; other settings stay as they were", async () => {
    const application = await createViaApi({ checkout_brand_color: "#0A7D4F", webhook_url: "https://shop.example/h" })
    expect(application.checkout_brand_color).toBe("#0a7d4f")

    const set = await patch(application.id, { checkout_logo_url: logoUrl, checkout_brand_color: "#FFD500" })
    expect(set.status, set.text).toBe(200)
    expect(set.body).toMatchObject({ checkout_logo_url: logoUrl, checkout_brand_color: "#ffd500" })
    const read = await admin(`/applications/${application.id}`)
    expect(read.body).toMatchObject({
      name: "Branded shop",
      webhook_url: "https://shop.example/h",
      checkout_logo_url: logoUrl,
      checkout_brand_color: "#ffd500"
    })
    const listed = (await admin("/applications")).body as { data: Array<ApplicationBody> }
    expect(listed.data.find((entry) => entry.id === application.id)).toMatchObject({ checkout_logo_url: logoUrl })

    // A change of something else keeps the branding.
    expect((await patch(application.id, { name: "Renamed" })).body).toMatchObject({
      checkout_logo_url: logoUrl,
      checkout_brand_color: "#ffd500"
    })
    const cleared = await patch(application.id, { checkout_logo_url: null, checkout_brand_color: null })
    expect(cleared.status).toBe(200)
    expect(cleared.body).toMatchObject({
      name: "Renamed",
      webhook_url: "https://shop.example/h",
      checkout_logo_url: null,
      checkout_brand_color: null
    })
  })

  it("refuses each bad value with 422 validation_failed naming the field, and stores nothing", async () => {
    const application = await createViaApi({ checkout_logo_url: logoUrl, checkout_brand_color: "#123456" })
    const cases: ReadonlyArray<readonly [string, unknown, string]> = [
      ["checkout_logo_url", "http://cdn.shop.example/logo.png", "must be an https URL"],
      ["checkout_logo_url", "https://user:pass@cdn.shop.example/logo.png", "must not contain a user name or password"],
      ["checkout_logo_url", `https://cdn.shop.example/${"l".repeat(2048)}`, "at most 2048 characters"],
      ["checkout_logo_url", "javascript:alert(1)", "must be an absolute https URL"],
      ["checkout_logo_url", "https://[2001:db8::1]/logo.png", "domain name or an IPv4 address"],
      ["checkout_logo_url", 42, ""],
      ["checkout_brand_color", "green", "must be a colour as #rrggbb"],
      ["checkout_brand_color", "#12345", "must be a colour as #rrggbb"],
      ["checkout_brand_color", "#123456;}body{display:none", "must be a colour as #rrggbb"],
      ["checkout_brand_color", 0x123456, ""]
    ]
    for (const [field, value, message] of cases) {
      const refused = await patch(application.id, { [field]: value })
      expect(refused.status, `${field}: ${String(value).slice(0, 60)}`).toBe(422)
      const { error } = refused.body as ErrorBody
      expect(error.code).toBe("validation_failed")
      expect(Object.keys(error.fields)).toEqual([field])
      expect(error.fields[field]?.join(" ")).toContain(message)
    }
    // Both at once: both fields named in one answer.
    const both = await patch(application.id, {
      checkout_logo_url: "ftp://x.example/l.png",
      checkout_brand_color: "red"
    })
    expect(Object.keys((both.body as ErrorBody).error.fields).sort()).toEqual([
      "checkout_brand_color",
      "checkout_logo_url"
    ])
    const created = await admin("/applications", { method: "POST", body: { name: "x", checkout_brand_color: "blue" } })
    expect(created.status).toBe(422)
    expect((await admin(`/applications/${application.id}`)).body).toMatchObject({
      checkout_logo_url: logoUrl,
      checkout_brand_color: "#123456"
    })
  })

  it("records the API's change in the audit log under the application", async () => {
    const application = await createViaApi({})
    await patch(application.id, { checkout_brand_color: "#0a7d4f" })
    const log = await admin(`/audit?application_id=${application.id}&limit=1`)
    expect((log.body as { data: Array<{ action: string }> }).data.map((entry) => entry.action)).toEqual([
      "operator_api.applications.update"
    ])
  })

  it("the operator's settings form shows, saves and clears the branding; the save is audited by name", async () => {
    const target = await server.createApplication({ name: "Form shop" })
    const operator = await createUser(server, { operatorAdmin: true })
    const client = await DashboardClient.signIn(server, operator)
    const path = `/dashboard/operator/applications/${target.application.id}`
    const form = await client.get(path)
    expect(form.html).toContain('name="checkout_logo_url"')
    expect(form.html).toContain('name="checkout_brand_color"')
    const value = (html: string, name: string) =>
      new RegExp(`name="${name}"[^>]*value="([^"]*)"`).exec(html)?.[1] ??
      new RegExp(`name="${name}"[^>]*>([^<]*)<`).exec(html)?.[1] ??
      ""
    const fields = (html: string) =>
      Object.fromEntries(OperatorSettings.formNames.map((name) => [name, value(html, name).replaceAll("&#44;", ",")]))

    const refused = await client.post(`${path}/settings`, { ...fields(form.html), checkout_brand_color: "teal" })
    expect(refused.status).toBe(422)
    expect(refused.html).toContain("checkout_brand_color must be a colour as #rrggbb")

    const saved = await client.post(`${path}/settings`, {
      ...fields(form.html),
      checkout_logo_url: logoUrl,
      checkout_brand_color: "#0A7D4F"
    })
    expect(saved.status, saved.html.slice(0, 400)).toBe(303)
    expect((await admin(`/applications/${target.application.id}`)).body).toMatchObject({
      checkout_logo_url: logoUrl,
      checkout_brand_color: "#0a7d4f"
    })
    const shown = await client.get(path)
    expect(value(shown.html, "checkout_brand_color")).toBe("#0a7d4f")
    const log = await admin(`/audit?application_id=${target.application.id}&limit=1`)
    expect((log.body as { data: Array<unknown> }).data[0]).toMatchObject({
      action: "application.settings_updated",
      details: { changed: ["checkout_logo_url", "checkout_brand_color"] }
    })

    const cleared = await client.post(`${path}/settings`, {
      ...fields(shown.html),
      checkout_logo_url: "",
      checkout_brand_color: ""
    })
    expect(cleared.status).toBe(303)
    expect((await admin(`/applications/${target.application.id}`)).body).toMatchObject({
      checkout_logo_url: null,
      checkout_brand_color: null
    })
  })

  it("the checkout shows the logo and the colour, and allows images from exactly the logo's origin", async () => {
    const shop = await server.createApplication({
      name: "Bakkerij <De Gouden Korenaar>",
      checkout_logo_url: logoUrl,
      checkout_brand_color: "#ffd500"
    })
    const { id, html, csp } = await checkout(shop)
    expect(csp).toBe(plainCsp.replace("img-src 'self' data:;", "img-src 'self' data: https://cdn.shop.example:8443;"))
    expect(html).toContain(
      `<img class="brand-logo" src="${logoUrl}" alt="Bakkerij &#60;De Gouden Korenaar&#62;" referrerpolicy="no-referrer">`
    )
    // Above the name.
    expect(html.indexOf('class="brand-logo"')).toBeLessThan(html.indexOf("<h1>"))
    // A pale brand: near-black text, and a near-black outline and edge on the white card.
    const dark = CheckoutBranding.nearBlack
    expect(html).toContain(`button.primary { background: #ffd500; color: ${dark}; border-color: ${dark}; }`)
    expect(html).toContain(`button:focus-visible { outline-color: ${dark}; }`)
    expect(html).toMatch(/\.brand-logo \{[^}]*max-height: 64px/)

    // The status page after paying carries the branding and the same policy.
    const form = await fetch(`${server.baseUrl}/checkout/${id}`)
    const cookie = (form.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
    const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
    const paid = await fetch(`${server.baseUrl}/checkout/${id}`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie, origin: server.baseUrl },
      body: new URLSearchParams({ csrf, action: "pay", name: "Ada" }).toString()
    })
    expect(paid.status).toBe(200)
    expect(paid.headers.get("content-security-policy")).toContain("img-src 'self' data: https://cdn.shop.example:8443;")
    expect(await paid.text()).toContain('class="brand-logo"')
    const again = await fetch(`${server.baseUrl}/checkout/${id}`)
    expect(again.headers.get("content-security-policy")).toContain("https://cdn.shop.example:8443;")
  })

  it("a dark brand keeps white text and its own outline; the colour alone leaves the CSP as it was", async () => {
    const shop = await server.createApplication({ name: "Night shop", checkout_brand_color: "#0a3d91" })
    const { html, csp } = await checkout(shop)
    expect(csp).toBe(plainCsp)
    expect(html).toContain("button.primary { background: #0a3d91; color: #ffffff; border-color: #0a3d91; }")
    expect(html).toContain("outline-color: #0a3d91;")
    expect(html).not.toContain("<img")
  })

  it("never renders a stored value the core's rule refuses; the database refuses malformed ones outright", async () => {
    const shop = await server.createApplication({ name: "Old shop" })
    // Past the API: a logo over plain http to another host (the CHECK lets an http(s) URL through).
    await server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE applications SET checkout_logo_url = 'http://cdn.shop.example/logo.png'
          WHERE id = ${shop.application.id}`
      })
    )
    const { html, csp } = await checkout(shop)
    expect(csp).toBe(plainCsp)
    expect(html).not.toContain("<img")
    expect(html).not.toContain("cdn.shop.example")

    const write = (column: string, value: string) =>
      server.run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`UPDATE applications SET ${sql(column)} = ${value} WHERE id = ${shop.application.id}`
        }).pipe(
          Effect.as("stored"),
          Effect.catchCause(() => Effect.succeed("refused"))
        )
      )
    expect(await write("checkout_brand_color", "red")).toBe("refused")
    expect(await write("checkout_brand_color", "#FFD500")).toBe("refused")
    expect(await write("checkout_brand_color", "#ffd500;}")).toBe("refused")
    expect(await write("checkout_logo_url", 'https://x.example/"><script>')).toBe("refused")
    expect(await write("checkout_logo_url", "data:image/png;base64,AAAA")).toBe("refused")
    expect(await write("checkout_logo_url", `https://x.example/${"a".repeat(2048)}`)).toBe("refused")
    expect(await write("checkout_brand_color", "#ffd500")).toBe("stored")
  })
})
