/**
 * The payment search as CSV (issue 22 §3): `payments.csv` on an application's dashboard and the operator's. The
 * file parses back (RFC 4180) to the payments the search finds, newest first, with the lists' filters; a cell a
 * spreadsheet would run as a formula is defused; an export of thousands of payments arrives whole and in order, as a
 * chunked stream (no length known up front); whoever may view the list may export it, nobody else; and each export
 * is in the audit log with its filters.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { batchSize, cell, columns } from "../src/dashboard/PaymentsCsv.ts"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import { query } from "./support/PaymentFixtures.ts"
import { expr, insertPayment, paymentsInsert, seedPayments } from "./support/PaymentSeed.ts"
import {
  databases,
  type RunningServer,
  startServer,
  type TestApplication,
  testPasswordCost
} from "./support/TestServer.ts"

/** RFC 4180, strictly: CRLF records, quoted fields with `""` for a quote; answers the records. */
const parseCsv = (text: string): Array<Array<string>> => {
  const records: Array<Array<string>> = []
  let record: Array<string> = []
  let field = ""
  let index = 0
  while (index < text.length) {
    if (text[index] === '"') {
      index++
      for (;;) {
        const quote = text.indexOf('"', index)
        if (quote < 0) throw new Error("unterminated quoted field")
        field += text.slice(index, quote)
        index = quote + 1
        if (text[index] === '"') {
          field += '"'
          index++
        } else break
      }
    } else {
      const end = text.slice(index).search(/,|\r\n/)
      const stop = end < 0 ? text.length : index + end
      const raw = text.slice(index, stop)
      if (raw.includes('"') || raw.includes("\n") || raw.includes("\r")) throw new Error(`bare field: ${raw}`)
      field += raw
      index = stop
    }
    if (text.startsWith(",", index)) {
      record.push(field)
      field = ""
      index++
    } else if (text.startsWith("\r\n", index)) {
      record.push(field)
      records.push(record)
      record = []
      field = ""
      index += 2
    } else if (index < text.length) throw new Error(`unexpected character at ${index}`)
  }
  if (field !== "" || record.length > 0) throw new Error("the last record has no CRLF")
  return records
}

/** The records as objects by the header's names. */
const rowsOf = (text: string) => {
  const [head, ...records] = parseCsv(text)
  expect(head).toEqual([...columns])
  for (const record of records) expect(record.length).toBe(columns.length)
  return records.map((record) => Object.fromEntries((head ?? []).map((name, at) => [name, record[at] ?? ""])))
}

describe("CSV cells", () => {
  it("quote what RFC 4180 asks for and defuse what a spreadsheet would run", () => {
    expect(cell("plain")).toBe("plain")
    expect(cell("a,b")).toBe('"a,b"')
    expect(cell('say "hi"')).toBe('"say ""hi"""')
    expect(cell("two\nlines")).toBe('"two\nlines"')
    expect(cell("=1+1")).toBe("'=1+1")
    expect(cell("+1")).toBe("'+1")
    expect(cell("-1")).toBe("'-1")
    expect(cell("@SUM(A1)")).toBe("'@SUM(A1)")
    expect(cell("\tx")).toBe("'\tx")
    expect(cell("\rx")).toBe('"\'\rx"')
    expect(cell('=HYPERLINK("http://x","y")')).toBe(`"'=HYPERLINK(""http://x"",""y"")"`)
    expect(cell("a=b")).toBe("a=b")
  })
})

describe.each(databases)("payments as CSV on %s", (database) => {
  let server: RunningServer
  let shop: TestApplication
  let other: TestApplication
  let viewer: DashboardClient
  let admin: DashboardClient
  let adminEmail: string

  /** Order references a spreadsheet would misread, or that need quoting, and text beyond ASCII. */
  const tricky = [
    '=HYPERLINK("http://evil.example","click")',
    "+31 6 1234",
    "-5",
    "@SUM(A1:A9)",
    "\tindented",
    "comma, inside",
    'quote " inside',
    "line\nbreak",
    "Bestellung für Jürgen — 5 €"
  ]

  beforeAll(async () => {
    server = await startServer(database, {}, { passwordCost: testPasswordCost })
    shop = await server.createApplication({ name: 'Shop, "CSV" =1' })
    other = await server.createApplication({ name: "Other CSV shop" })
    for (const [index, reference] of tricky.entries())
      await insertPayment(server, {
        application_id: shop.application.id,
        order_reference: reference,
        amount: 1000 + index,
        currency: index === 8 ? "JPY" : "EUR",
        customer: { name: null, email: index === 0 ? "=cmd@evil.example" : `buyer${index}@shop.example`, phone: null },
        created_at: new Date(Date.UTC(2026, 0, 1 + index, 12)),
        expires_at: new Date(Date.UTC(2030, 0, 1))
      })
    await insertPayment(server, {
      application_id: other.application.id,
      order_reference: "not-the-shops",
      created_at: new Date(Date.UTC(2026, 0, 3))
    })
    viewer = await DashboardClient.signIn(
      server,
      await createUser(server, { roles: [[shop.application.id, "viewer"]] })
    )
    const operatorAdmin = await createUser(server, { operatorAdmin: true })
    adminEmail = operatorAdmin.email
    admin = await DashboardClient.signIn(server, operatorAdmin)
  })
  afterAll(() => server.close())

  const shopCsv = (filters = "") => `/dashboard/apps/${shop.application.id}/payments.csv${filters}`

  it("a header row, then the application's payments newest first, parsing back to what is stored", async () => {
    const answer = await viewer.get(shopCsv())
    expect(answer.status, answer.html).toBe(200)
    expect(answer.headers.get("content-type")).toMatch(/^text\/csv; charset=utf-8/)
    expect(answer.headers.get("content-disposition")).toMatch(
      new RegExp(`^attachment; filename="payments-${shop.application.id}-\\d{4}-\\d{2}-\\d{2}\\.csv"$`)
    )
    expect(answer.headers.get("cache-control")).toBe("no-store")
    const rows = rowsOf(answer.html)
    const stored = await query(
      server,
      (sql) => sql`
        SELECT id, amount, currency, order_reference, customer ->> 'email' AS email, created_at, expires_at, mode, status
        FROM payments WHERE application_id = ${shop.application.id} ORDER BY created_at DESC, seq DESC
      `
    )
    expect(rows.map((row) => row.id)).toEqual(stored.map((row) => row.id))
    for (const [at, row] of rows.entries()) {
      const payment = stored[at] ?? {}
      const reference = String(payment.order_reference)
      // A formula's first character is kept behind a `'`; everything else is the stored text, byte for byte.
      expect(row.order_reference).toBe(/^[=+\-@\t\r]/.test(reference) ? `'${reference}` : reference)
      expect(row.amount).toBe(String(payment.amount))
      expect(row.currency).toBe(payment.currency)
      expect(row.application_id).toBe(shop.application.id)
      expect(row.application_name).toBe('Shop, "CSV" =1')
      expect(row.created_at).toBe(new Date(String(payment.created_at)).toISOString())
      expect(row.expires_at).toBe(new Date(String(payment.expires_at)).toISOString())
      expect(row.mode).toBe(payment.mode)
      expect(row.status).toBe(payment.status)
    }
    const byReference = new Map(rows.map((row) => [row.order_reference, row]))
    expect(byReference.get('\'=HYPERLINK("http://evil.example","click")')?.customer_email).toBe("'=cmd@evil.example")
    expect(byReference.get("comma, inside")?.amount_decimal).toBe("10.05")
    expect(byReference.get("line\nbreak")?.amount).toBe("1007")
    // JPY has no minor unit: 1008 is ¥1008.
    expect(byReference.get("Bestellung für Jürgen — 5 €")?.amount_decimal).toBe("1008")
    expect(byReference.get("'-5")?.refunded_amount_decimal).toBe("0.00")
    expect(answer.html).not.toContain("not-the-shops")
  })

  it("takes the list's filters", async () => {
    const byEmail = rowsOf((await viewer.get(shopCsv("?customer_email=BUYER3%40shop.example"))).html)
    expect(byEmail.map((row) => row.order_reference)).toEqual(["@SUM(A1:A9)"].map((text) => `'${text}`))
    const range = rowsOf((await viewer.get(shopCsv("?created_from=2026-01-02&created_to=2026-01-03"))).html)
    expect(range.map((row) => row.order_reference)).toEqual(
      ["'-5", "+31 6 1234"].map((text) => text.replace(/^\+/, "'+"))
    )
    const amounts = rowsOf((await viewer.get(shopCsv("?currency=EUR&amount_min=10.05&amount_max=10.06"))).html)
    expect(amounts.map((row) => row.amount)).toEqual(["1006", "1005"])
    // A malformed payment id finds nothing: the header alone.
    const none = await viewer.get(shopCsv("?payment_id=nope"))
    expect(none.status).toBe(200)
    expect(none.html).toBe(`${columns.join(",")}\r\n`)
    // Another application's payment, by id, is not in this application's export.
    const [theirs] = await query(
      server,
      (sql) => sql`SELECT id FROM payments WHERE application_id = ${other.application.id}`
    )
    expect(rowsOf((await viewer.get(shopCsv(`?payment_id=${String(theirs?.id)}`))).html)).toEqual([])
    // The operator's export across applications finds it.
    const operator = rowsOf((await admin.get(`/dashboard/operator/payments.csv?payment_id=${String(theirs?.id)}`)).html)
    expect(operator.map((row) => row.application_id)).toEqual([other.application.id])
  })

  it("the lists link to the export of their search", async () => {
    const list = await viewer.get(
      `/dashboard/apps/${shop.application.id}/payments?customer_email=a%40b.example&mode=test`
    )
    expect(list.html).toMatch(
      new RegExp(
        `<a class="button secondary" href="/dashboard/apps/${shop.application.id}/payments\\.csv\\?[^"]*customer_email&#61;a%40b\\.example[^"]*" download>Download CSV</a>`
      )
    )
    const operatorList = await admin.get(`/dashboard/operator/payments?application=${shop.application.id}`)
    expect(operatorList.html).toMatch(
      new RegExp(
        `href="/dashboard/operator/payments\\.csv\\?[^"]*application&#61;${shop.application.id}[^"]*" download>`
      )
    )
  })

  it("payments that share one instant to the microsecond are all exported, across batches", async () => {
    const same = await server.createApplication({ name: "Same instant shop" })
    const count = batchSize + 100
    // One statement: every row's created_at is the same now(), microseconds and all.
    await seedPayments(
      server,
      paymentsInsert(
        { application_id: same.application.id, order_reference: expr("'same-' || i"), created_at: expr("now()") },
        `generate_series(1, ${count}) i`
      )
    )
    const rows = rowsOf((await admin.get(`/dashboard/apps/${same.application.id}/payments.csv`)).html)
    expect(rows.length).toBe(count)
    expect(new Set(rows.map((row) => row.order_reference)).size).toBe(count)
  })

  it("thousands of payments arrive whole and in order, streamed in chunks", async () => {
    const big = await server.createApplication({ name: "Big CSV shop" })
    const count = batchSize * 6 + 7
    await seedPayments(
      server,
      paymentsInsert(
        {
          application_id: big.application.id,
          order_reference: expr("'bulk-' || i"),
          amount: expr("100 + i"),
          // Some share a creation time: the order falls back to insertion (seq), as the lists'.
          created_at: expr("'2026-02-01T00:00:00Z'::timestamptz + interval '1 second' * (i / 3)")
        },
        `generate_series(1, ${count}) i`
      )
    )
    const answer = await admin.get(`/dashboard/apps/${big.application.id}/payments.csv`)
    expect(answer.status).toBe(200)
    // Streamed: no length known up front, the body sent in chunks.
    expect(answer.headers.get("content-length")).toBeNull()
    expect(answer.headers.get("transfer-encoding")).toBe("chunked")
    const rows = rowsOf(answer.html)
    expect(rows.length).toBe(count)
    expect(rows.map((row) => row.order_reference)).toEqual(
      Array.from({ length: count }, (_, index) => `bulk-${count - index}`)
    )
    expect(new Set(rows.map((row) => row.id)).size).toBe(count)
    // With a filter that keeps the newest 1000 (amounts grow with i), across batches.
    const some = rowsOf(
      (
        await admin.get(
          `/dashboard/operator/payments.csv?application=${big.application.id}&amount_min=${100 + count - 999}`
        )
      ).html
    )
    expect(some.length).toBe(1000)
    expect(some[0]?.order_reference).toBe(`bulk-${count}`)
    expect(some.at(-1)?.order_reference).toBe(`bulk-${count - 999}`)
  })

  it("whoever may view the list may export it; nobody else", async () => {
    // A member of another application: 404, as the list.
    const outsider = await DashboardClient.signIn(
      server,
      await createUser(server, { roles: [[other.application.id, "owner"]] })
    )
    const refused = await outsider.get(shopCsv())
    expect(refused.status).toBe(404)
    expect(refused.html).not.toContain(columns.join(","))
    // Not an operator admin: the operator's export is 404.
    expect((await viewer.get("/dashboard/operator/payments.csv")).status).toBe(404)
    expect((await outsider.get("/dashboard/operator/payments.csv")).status).toBe(404)
    // Signed out: sent to sign in.
    const anonymous = await fetch(`${server.baseUrl}${shopCsv()}`, { redirect: "manual" })
    expect(anonymous.status).toBe(303)
    expect(anonymous.headers.get("location")).toMatch(/^\/dashboard\/login/)
    // An operator admin may export any application's.
    expect((await admin.get(shopCsv())).status).toBe(200)
    // Other methods: 405.
    expect((await viewer.post(shopCsv())).status).toBe(405)
  })

  it("each export is in the audit log, with its filters", async () => {
    await viewer.get(shopCsv("?customer_email=buyer1%40shop.example&match=prefix&order_reference=%2B31"))
    await admin.get("/dashboard/operator/payments.csv?status=paid")
    const answer = await server.request("/admin/api/v1/audit?limit=100", { key: server.adminToken })
    const entries = (
      answer.body as {
        data: Array<{ actor: string; action: string; application_id: string | null; details: Record<string, unknown> }>
      }
    ).data.filter((entry) => entry.action === "payments.exported")
    const app = entries.find((entry) => entry.application_id === shop.application.id && entry.actor !== adminEmail)
    expect(app?.details).toEqual({
      filters: { customer_email: "buyer1@shop.example", match: "prefix", order_reference: "+31" }
    })
    const operator = entries.find((entry) => entry.actor === adminEmail && entry.application_id === null)
    expect(operator?.details).toEqual({ filters: { status: "paid" } })
  })
})
