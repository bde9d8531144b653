/**
 * Fuzzing every kind of endpoint over real HTTP (issue 11, point 10): random JSON bodies — known field names with
 * wrong types, keys named like Object.prototype's members, U+0000, unpaired surrogates, control characters, huge and
 * odd numbers — random headers, query strings and form posts. Whatever arrives, the answer is never a 5xx, never
 * shows a stack trace, and an API answer that refuses is always the error envelope.
 *
 * Seeded: a failure prints the seed (and fast-check's counterexample); rerun it with `KASSA_FUZZ_SEED=<seed>`.
 * Bounded: a fixed number of runs per endpoint family, each family its own test.
 */
import { OperatorSettings } from "@kassa/core"
import * as fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import {
  databases,
  type RunningServer,
  startServer,
  type TestApplication,
  testPasswordCost
} from "./support/TestServer.ts"

const seed = Number(process.env.KASSA_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
console.info(`[fuzz] seed ${seed} (rerun with KASSA_FUZZ_SEED=${seed})`)

const runs = 120
const options = (numRuns = runs) => ({ seed, numRuns, endOnFailure: true })

/** Characters that broke things before: U+0000, unpaired surrogates, CR/LF, U+2028, non-ASCII, `%`, quotes. */
const nasty = fc.constantFrom(
  "\u0000",
  "\ud800",
  "\udfff",
  "\r\n",
  "\u2028",
  "é",
  "😀",
  "%00",
  "%",
  '"',
  "'",
  "<script>",
  "\\",
  " ",
  "",
  "__proto__"
)
const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.array(nasty, { maxLength: 5 }).map((parts) => parts.join("")),
  fc.tuple(fc.webUrl(), nasty).map(([url, bad]) => `${url}${bad}`),
  fc.emailAddress(),
  fc.constant("x".repeat(2000))
)
const number = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, 1, -1, 1.5, 2 ** 53, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, 1e308, -1e308)
)
const prototypeKeys = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"]

/** A JSON value: mostly scalars the fields expect, sometimes the wrong shape. */
const value: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    text,
    number,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.oneof(text, fc.constantFrom(...prototypeKeys)), tie("value"), { maxKeys: 3 })
  )
})).value

/** A body object over an endpoint's own field names (so validation gets past "unknown field" often), plus strangers. */
const bodyOver = (fields: ReadonlyArray<string>, fixed: Record<string, fc.Arbitrary<unknown>> = {}) =>
  fc
    .tuple(
      fc.dictionary(fc.oneof(fc.constantFrom(...fields, ...prototypeKeys), text), value, {
        maxKeys: 6
      }),
      fc.record(fixed, { requiredKeys: [] })
    )
    .map(([random, chosen]) => ({ ...random, ...chosen }))

/** What is sent: usually the JSON of a body, sometimes raw text or a JSON value that is not an object. */
const payload = (body: fc.Arbitrary<Record<string, unknown>>) =>
  fc.oneof(
    { weight: 6, arbitrary: body.map((object) => JSON.stringify(object)) },
    { weight: 1, arbitrary: value.map((any) => JSON.stringify(any) ?? "null") },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 60 }) }
  )

/** Header values fetch sends as they are: printable ASCII (it refuses CR, LF, U+0000, and non-ASCII in some). */
const headerValue = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)), maxLength: 300 }),
  fc.constantFrom("", " ", "provider_error", "application/json", "text/plain", "application/json; charset=latin1")
)
const headers = fc.record(
  {
    "idempotency-key": headerValue,
    "kassa-simulate": headerValue,
    "content-type": fc.oneof(
      { weight: 5, arbitrary: fc.constant("application/json") },
      { weight: 1, arbitrary: headerValue }
    ),
    accept: headerValue,
    "x-forwarded-for": headerValue
  },
  { requiredKeys: ["content-type"] }
)

/** A path segment from any text: unpaired surrogates (which encodeURIComponent refuses) as U+FFFD. */
const segment = (raw: string) => encodeURIComponent(raw.replace(/\p{Cs}/gu, "\uFFFD"))

const stackTrace = /\n\s+at .+[(:]\d+|node_modules|\.ts:\d+:\d+|TypeError|SqlError/

interface Answer {
  readonly status: number
  readonly contentType: string
  readonly text: string
}

/** Never a 5xx, never a stack trace; an API refusal is `{"error":{"code","message"}}` as JSON. */
const checkAnswer = (label: string, answer: Answer, api: boolean) => {
  expect(answer.status, `${label} → ${answer.status} ${answer.text.slice(0, 300)}`).toBeLessThan(500)
  expect(answer.text, label).not.toMatch(stackTrace)
  if (api && answer.status >= 400) {
    expect(answer.contentType, label).toMatch(/^application\/json/)
    const body = JSON.parse(answer.text) as { error?: { code?: unknown; message?: unknown } }
    expect(typeof body.error?.code, `${label}: ${answer.text.slice(0, 300)}`).toBe("string")
    expect(typeof body.error?.message, label).toBe("string")
  }
}

describe.each(databases)("fuzzed requests on %s", (database) => {
  let server: RunningServer
  let shop: TestApplication
  let target: TestApplication
  let paymentIds: Array<string>
  let userId: string
  let operatorClient: DashboardClient

  const send = async (path: string, init: RequestInit & { headers?: Record<string, string> }): Promise<Answer> => {
    const response = await fetch(`${server.baseUrl}${path}`, { redirect: "manual", ...init })
    return {
      status: response.status,
      contentType: response.headers.get("content-type") ?? "",
      text: await response.text()
    }
  }

  const createPayment = async () => {
    const response = await server.request("/api/v1/payments", {
      method: "POST",
      key: shop.testKey,
      body: {
        amount: 1000,
        method: "card",
        order_reference: `fuzz-${crypto.randomUUID()}`,
        return_url: "https://shop.example/r"
      }
    })
    expect(response.status, response.text).toBe(201)
    return (response.body as { id: string }).id
  }

  beforeAll(async () => {
    // Password hashes at the test cost: the fuzzer is after what the forms answer, not the hasher's pace.
    server = await startServer(database, {}, { passwordCost: testPasswordCost })
    // A rate limit no run reaches: the fuzzer is after the validation behind it, not the limit.
    shop = await server.createApplication({ rate_limit_per_minute: 1_000_000, methods: ["card", "ideal"] })
    target = await server.createApplication({ rate_limit_per_minute: 1_000_000 })
    paymentIds = []
    for (let index = 0; index < 4; index++) paymentIds.push(await createPayment())
    // One paid payment, for refunds.
    await server.request(`/api/v1/test/payments/${paymentIds[0]}/simulate`, {
      method: "POST",
      key: shop.testKey,
      body: { outcome: "paid" }
    })
    // The operator API fuzzes a user of its own, so a fuzzed PATCH cannot sign the dashboard's operator out.
    userId = (await createUser(server)).id
    operatorClient = await DashboardClient.signIn(server, await createUser(server, { operatorAdmin: true }))
  })
  afterAll(() => server.close())

  const paymentId = () => fc.oneof(fc.constantFrom(...paymentIds), fc.uuid(), text.map(segment))

  it("merchant API: create, refund, cancel, simulate", async () => {
    const createFields = [
      "amount",
      "currency",
      "method",
      "order_reference",
      "description",
      "customer",
      "locale",
      "return_url",
      "metadata"
    ]
    const endpoint = fc.oneof(
      fc.record({
        path: fc.constant("/api/v1/payments"),
        body: payload(
          bodyOver(createFields, {
            amount: fc.integer({ min: 1, max: 100_000 }),
            order_reference: text,
            customer: fc.record({ name: text, email: text, phone: text }, { requiredKeys: [] }),
            metadata: fc.dictionary(fc.oneof(text, fc.constantFrom(...prototypeKeys)), value, { maxKeys: 4 })
          })
        )
      }),
      fc.record({
        path: paymentId().map((id) => `/api/v1/payments/${id}/refunds`),
        body: payload(bodyOver(["amount", "reason"], { reason: text }))
      }),
      fc.record({ path: paymentId().map((id) => `/api/v1/payments/${id}/cancel`), body: payload(bodyOver([])) }),
      fc.record({
        path: paymentId().map((id) => `/api/v1/test/payments/${id}/simulate`),
        body: payload(bodyOver(["outcome"], { outcome: fc.constantFrom("paid", "failed", "expired") }))
      })
    )
    await fc.assert(
      fc.asyncProperty(endpoint, headers, async ({ path, body }, sent) => {
        const answer = await send(path, {
          method: "POST",
          headers: { ...sent, authorization: `Bearer ${shop.testKey}` },
          body
        })
        checkAnswer(`POST ${path} ${body.slice(0, 200)}`, answer, true)
      }),
      options()
    )
  })

  it("merchant API: list and fetch with any query", async () => {
    const query = fc
      .dictionary(
        fc.oneof(fc.constantFrom("limit", "starting_after", "status", "order_reference"), text),
        fc.oneof(text, number.map(String)),
        { maxKeys: 4 }
      )
      .map((entries) => new URLSearchParams(entries as Record<string, string>).toString())
    const path = fc.oneof(
      query.map((search) => `/api/v1/payments?${search}`),
      paymentId().map((id) => `/api/v1/payments/${id}`)
    )
    await fc.assert(
      fc.asyncProperty(path, async (url) => {
        checkAnswer(`GET ${url}`, await send(url, { headers: { authorization: `Bearer ${shop.testKey}` } }), true)
      }),
      options()
    )
  })

  it("operator API: applications, keys, users, memberships, audit, deliveries", async () => {
    // Every setting of the core's catalogue; lists as arrays of text, text settings as text, the rest any value.
    const listOf = fc.array(text, { maxLength: 3 })
    const settingsBody = bodyOver(
      OperatorSettings.names,
      Object.fromEntries(
        OperatorSettings.names.flatMap((name): Array<[string, fc.Arbitrary<unknown>]> => {
          const kind = OperatorSettings.settings[name].input._tag
          return kind === "List" ? [[name, listOf]] : kind === "Text" || kind === "OptionalText" ? [[name, text]] : []
        })
      )
    )
    const id = fc.oneof(fc.constant(target.application.id), fc.uuid(), text.map(segment))
    const query = fc
      .dictionary(
        fc.oneof(
          fc.constantFrom("limit", "before", "application_id", "status", "event", "mode", "starting_after"),
          text
        ),
        text,
        { maxKeys: 3 }
      )
      .map((entries) => new URLSearchParams(entries as Record<string, string>).toString())
    const endpoint = fc.oneof(
      fc.record({ method: fc.constant("POST"), path: fc.constant("/applications"), body: payload(settingsBody) }),
      fc.record({
        method: fc.constant("PATCH"),
        path: id.map((app) => `/applications/${app}`),
        // Status moves are left out: a fuzzed status would only test the lifecycle, which has its own tests.
        body: payload(settingsBody.map(({ status: _status, ...rest }) => rest))
      }),
      fc.record({
        method: fc.constant("POST"),
        path: id.map((app) => `/applications/${app}/keys`),
        body: payload(bodyOver(["mode"]))
      }),
      // Passwords shorter than 12 characters: a valid one would cost a password hash per run.
      fc.record({
        method: fc.constant("POST"),
        path: fc.constant("/users"),
        body: payload(bodyOver(["email", "operator_admin"], { email: text, password: fc.string({ maxLength: 11 }) }))
      }),
      fc.record({
        method: fc.constant("PATCH"),
        path: fc.oneof(fc.constant(userId), fc.uuid()).map((user) => `/users/${user}`),
        body: payload(bodyOver(["operator_admin"], { password: fc.string({ maxLength: 11 }) }))
      }),
      fc.record({
        method: fc.constant("PUT"),
        path: id.map((app) => `/users/${userId}/memberships/${app}`),
        body: payload(bodyOver(["role"], { role: fc.oneof(text, fc.constantFrom("owner", "viewer")) }))
      }),
      fc.record({ method: fc.constant("GET"), path: query.map((search) => `/audit?${search}`), body: fc.constant("") }),
      fc.record({
        method: fc.constant("GET"),
        path: fc.tuple(id, query).map(([app, search]) => `/applications/${app}/deliveries?${search}`),
        body: fc.constant("")
      })
    )
    await fc.assert(
      fc.asyncProperty(endpoint, headers, async ({ method, path, body }, sent) => {
        const answer = await send(`/admin/api/v1${path}`, {
          method,
          headers: { ...sent, authorization: `Bearer ${server.adminToken}` },
          ...(method === "GET" ? {} : { body })
        })
        checkAnswer(`${method} /admin/api/v1${path} ${body.slice(0, 200)}`, answer, true)
      }),
      options()
    )
  })

  it("hosted checkout: any form post, with a valid or a wrong token", async () => {
    const form = fc.record(
      {
        action: fc.oneof(fc.constantFrom("pay", "fail", "expire"), text),
        name: text,
        email: text,
        phone: text,
        method: fc.oneof(fc.constantFrom("card", "ideal"), text),
        csrf: text
      },
      { requiredKeys: [] }
    )
    await fc.assert(
      fc.asyncProperty(form, fc.boolean(), async (fields, validToken) => {
        const id = await createPayment()
        const page = await fetch(`${server.baseUrl}/checkout/${id}`)
        const html = await page.text()
        const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
        const token = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ""
        const body = new URLSearchParams({ ...fields, ...(validToken ? { csrf: token } : {}) } as Record<
          string,
          string
        >)
        const answer = await send(`/checkout/${id}`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", cookie, origin: server.baseUrl },
          body: body.toString()
        })
        checkAnswer(`POST /checkout/${id} ${body.toString().slice(0, 200)}`, answer, false)
      }),
      // A payment per run: fewer runs, the same bound.
      options(60)
    )
  })

  it("dashboard: the sign-in form and signed-in forms and filters", async () => {
    // The operator's settings form: every field of the core's catalogue, number fields sometimes numbers.
    const settingsForm = fc.record(
      Object.fromEntries(
        OperatorSettings.formNames.map((name) => [
          name,
          OperatorSettings.settings[name].input._tag === "Integer" ? fc.oneof(text, number.map(String)) : text
        ])
      ),
      { requiredKeys: [] }
    )
    const filters = fc
      .dictionary(
        fc.constantFrom("q", "status", "mode", "order_reference", "payment_id", "match", "actor", "action", "event"),
        text,
        { maxKeys: 4 }
      )
      .map((entries) => new URLSearchParams(entries).toString())
    const step = fc.oneof(
      settingsForm.map((fields) => ({
        kind: "post" as const,
        path: `/dashboard/operator/applications/${target.application.id}/settings`,
        fields
      })),
      settingsForm.map((fields) => ({ kind: "post" as const, path: "/dashboard/operator/applications", fields })),
      fc
        .tuple(
          fc.constantFrom(
            "/dashboard/operator/payments",
            "/dashboard/operator/applications",
            "/dashboard/operator/audit"
          ),
          filters
        )
        .map(([path, search]) => ({ kind: "get" as const, path: `${path}?${search}`, fields: {} }))
    )
    await fc.assert(
      fc.asyncProperty(step, async ({ kind, path, fields }) => {
        if (kind === "post") await operatorClient.get(path.endsWith("/settings") ? path.slice(0, -9) : `${path}/new`)
        const page =
          kind === "post"
            ? await operatorClient.post(path, fields as Record<string, string>)
            : await operatorClient.get(path)
        checkAnswer(
          `${kind} ${path} ${JSON.stringify(fields).slice(0, 200)}`,
          { ...page, contentType: "", text: page.html },
          false
        )
      }),
      options(80)
    )
    // Sign-in: each attempt costs a password hash, so a few only.
    await fc.assert(
      fc.asyncProperty(text, fc.string({ maxLength: 30 }), async (email, password) => {
        const stranger = new DashboardClient(server.baseUrl)
        const page = await stranger.login(email, password)
        checkAnswer(`sign-in ${JSON.stringify(email)}`, { ...page, contentType: "", text: page.html }, false)
      }),
      options(8)
    )
  })
})
