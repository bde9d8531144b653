/**
 * One class per error code, and every answer — declared by the endpoint or not, Kassa's or a proxy's — becoming a
 * typed SDK error. Answers come from the fault proxy, so codes the real server rarely gives (server_error, the
 * retryable 409s, http_error) are covered too; server.test.ts gets the others from the real server.
 */

import { readFileSync } from "node:fs"
import * as sdk from "@kassa/client"
import {
  type AnyKassaError,
  ConnectionError,
  errorClasses,
  HttpError,
  Kassa,
  KassaApiError,
  KassaError,
  NotFoundError,
  RateLimitedError,
  RequestAbortedError,
  type ServerError,
  TimeoutError,
  UnexpectedResponseError,
  ValidationFailedError
} from "@kassa/client"
import { ApiError, ErrorEnvelope } from "@kassa/core"
import { Effect } from "effect"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type RunningServer, startServer } from "../../server/test/support/TestServer.ts"
import { type Answer, type FaultProxy, startFaultProxy } from "./support/FaultProxy.ts"

const paymentId = "0b5e2a57-8f0c-4c43-9a55-4b1b8a4f8f10"

/** One error of every code, with its added fields. */
const samples: ReadonlyArray<ApiError.ApiError> = [
  new ApiError.Unauthenticated({ message: "No key." }),
  new ApiError.InvalidApiKey({ message: "Unknown key." }),
  new ApiError.ApplicationDisabled({ message: "Disabled." }),
  new ApiError.ApplicationPendingReview({ message: "In review." }),
  new ApiError.ApplicationSuspended({ message: "Suspended." }),
  new ApiError.IpNotAllowed({ message: "Not from there." }),
  new ApiError.NotFound({ message: "No such payment." }),
  new ApiError.OrderReferenceAlreadyPaid({ message: "Taken.", payment_id: paymentId }),
  new ApiError.IdempotencyKeyReused({ message: "Other body." }),
  new ApiError.IdempotencyRequestInProgress({ message: "Running." }),
  new ApiError.PaymentNotCancellable({ message: "Paid.", status: "paid" }),
  new ApiError.PaymentNotRefundable({ message: "Pending.", status: "pending" }),
  new ApiError.PaymentNotPending({ message: "Failed.", status: "failed" }),
  new ApiError.PaymentBusy({ message: "Busy." }),
  new ApiError.ValidationFailed({ message: "Invalid fields: amount", fields: { amount: ["must be positive"] } }),
  new ApiError.MethodRequired({ message: "Which method?" }),
  new ApiError.MethodNotEnabled({ message: "Not that one." }),
  new ApiError.AmountBelowMinimum({ message: "Too small.", min_amount: 100 }),
  new ApiError.AmountAboveMaximum({ message: "Too large.", max_amount: 50_000 }),
  new ApiError.ReturnUrlNotAllowed({ message: "Other host." }),
  new ApiError.RefundAmountExceedsRefundable({ message: "Too much.", refundable_amount: 700 }),
  new ApiError.RefundsProcessedManually({ message: "Manual.", docs_url: "https://kassa.example/docs/refunds" }),
  new ApiError.RateLimited({ message: "Slow down.", retryAfterSeconds: 7 }),
  new ApiError.ProviderError({ message: "Refused.", payment_id: paymentId }),
  new ApiError.ServerError({ message: "Oops." }),
  new ApiError.HttpError({ message: "Use GET.", httpStatus: 405 })
]

const answerOf = (error: ApiError.ApiError): Answer => {
  const status = ApiError.statusOf(error)
  return {
    status,
    headers: {
      "content-type": "application/json",
      "request-id": `req_${error._tag}`,
      ...(error._tag === "RateLimited" ? { "retry-after": String(error.retryAfterSeconds) } : {})
    },
    body: JSON.stringify(ApiError.toWire(error))
  }
}

/** The fields an SDK error should carry for a wire error: its added fields (`status` renamed) and the answer's. */
const expectedFields = (error: ApiError.ApiError) => {
  const { code, message, status, ...added } = ApiError.toWire(error).error
  return {
    code,
    message,
    ...added,
    ...(status === undefined ? {} : { payment_status: status }),
    status: ApiError.statusOf(error),
    requestId: `req_${error._tag}`,
    ...(error._tag === "RateLimited" ? { retryAfter: error.retryAfterSeconds } : {})
  }
}

describe("error classes", () => {
  it("every code of the catalogue has its class, exported under the catalogue's name, with the row's code and fields", () => {
    const catalogue = Object.entries(ApiError.catalogue)
    expect(Object.keys(errorClasses).sort()).toEqual(catalogue.map(([, { code }]) => code).sort())
    expect(new Set(samples.map(({ _tag }) => _tag))).toEqual(new Set(Object.keys(ApiError.catalogue)))
    for (const [tag, row] of catalogue) {
      const ErrorClass = errorClasses[row.code]
      const name = tag.endsWith("Error") ? tag : `${tag}Error`
      expect(ErrorClass.name, row.code).toBe(name)
      expect((sdk as Readonly<Record<string, unknown>>)[name], name).toBe(ErrorClass)
      expect(ErrorClass.code).toBe(row.code)
      const fields = ApiError.addedFields(tag as ApiError.ApiErrorTag).map((field) =>
        field === "status" ? "payment_status" : field
      )
      const init = Object.fromEntries(fields.map((field) => [field, `${field} value`]))
      const error = new ErrorClass({ message: "m", status: 400, requestId: "req_1", ...init } as never)
      expect(error.code).toBe(row.code)
      expect(error._tag).toBe(name)
      expect(error.name).toBe(name)
      expect(error).toMatchObject(init)
      expect(error).toBeInstanceOf(KassaApiError)
      expect(error).toBeInstanceOf(KassaError)
      expect(error).toBeInstanceOf(Error)
      expect(String(error)).toBe(`${name}: m`)
    }
  })

  it("the README's table of errors is the catalogue's: class, code, status and fields of every code", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")
    const rows = [...readme.matchAll(/^\| `(\w+)` \| `(\w+)` \| ([\d, ]+) \|(.*)\|$/gm)].map(
      ([, name, code, status, fields]) => ({ name, code, status, fields })
    )
    expect(rows.map(({ code }) => code).sort()).toEqual(Object.keys(errorClasses).sort())
    for (const { name, code, status, fields } of rows) {
      const row = ApiError.byCode[code as ApiError.ErrorCode]
      expect(name, code).toBe(errorClasses[row.code].name)
      expect(status, code).toBe(
        code === "http_error" ? Object.keys(ErrorEnvelope.httpErrors).join(", ") : String(row.status)
      )
      const tag = Object.entries(ApiError.catalogue).find(([, { code: c }]) => c === code)?.[0] as ApiError.ApiErrorTag
      for (const field of ApiError.addedFields(tag)) {
        expect(fields, code).toContain(`\`${field === "status" ? "payment_status" : field}\``)
      }
    }
  })

  it("the errors without a code on the wire are KassaErrors too", () => {
    const errors = [
      new ConnectionError({ message: "down" }),
      new TimeoutError({ message: "slow" }),
      new RequestAbortedError({ message: "aborted" }),
      new UnexpectedResponseError({ message: "html", status: 502, requestId: undefined, body: "<html>" })
    ]
    expect(errors.map(({ code }) => code)).toEqual([
      "connection_error",
      "timeout",
      "request_aborted",
      "unexpected_response"
    ])
    for (const error of errors) {
      expect(error).toBeInstanceOf(KassaError)
      expect(error).not.toBeInstanceOf(KassaApiError)
      expect(error.name).toBe(error._tag)
    }
  })

  it("are Effect errors: yieldable and caught by tag", async () => {
    const failWith = (error: NotFoundError | ServerError) =>
      Effect.gen(function* () {
        return yield* error
      })
    const program = failWith(new NotFoundError({ message: "gone", status: 404, requestId: "req_2" })).pipe(
      Effect.catchTag("NotFoundError", (error) => Effect.succeed(`${error.code} ${error.requestId}`)),
      Effect.catchTag("ServerError", () => Effect.succeed("unreachable"))
    )
    expect(await Effect.runPromise(program)).toBe("not_found req_2")
  })
})

describe("answers, declared or not", () => {
  let server: RunningServer
  let proxy: FaultProxy
  let kassa: Kassa
  beforeAll(async () => {
    server = await startServer("pglite")
    proxy = await startFaultProxy(server.baseUrl)
    const { testKey } = await server.createApplication()
    kassa = new Kassa({ apiKey: testKey, baseUrl: proxy.baseUrl, maxRetries: 0 })
  })
  afterAll(async () => {
    await proxy.close()
    await server.close()
  })
  beforeEach(() => proxy.script())

  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => expect.fail("expected the call to fail"),
      (error: unknown) => error as AnyKassaError
    )

  // `refund` declares most codes (decoded by the contract); `get` declares few (the rest take the fallback path).
  const calls = {
    get: () => kassa.payments.get(paymentId),
    refund: () => kassa.payments.refund(paymentId, { amount: 100 })
  }

  describe.each(Object.entries(calls))("%s", (_, call) => {
    it.each(samples.map((sample) => [sample._tag, sample] as const))("%s becomes its class", async (_, sample) => {
      proxy.script({ answer: answerOf(sample) })
      const error = await failure(call())
      expect(error).toBeInstanceOf(errorClasses[ApiError.catalogue[sample._tag].code])
      expect(error).toMatchObject(expectedFields(sample))
    })
  })

  it("a proxy's HTML page becomes UnexpectedResponseError with the status and the start of the body", async () => {
    proxy.script({ answer: { status: 502, headers: { "content-type": "text/html" }, body: "<h1>Bad Gateway</h1>" } })
    const error = await failure(kassa.payments.get(paymentId))
    expect(error).toBeInstanceOf(UnexpectedResponseError)
    expect(error).toMatchObject({ status: 502, body: "<h1>Bad Gateway</h1>", requestId: undefined })
  })

  it("a 4xx that is not Kassa's is not retried", async () => {
    proxy.script({ answer: { status: 404, headers: { "content-type": "text/plain" }, body: "nothing here" } })
    const error = await failure(new Kassa({ apiKey: "pk_test_x", baseUrl: proxy.baseUrl }).payments.get(paymentId))
    expect(error).toBeInstanceOf(UnexpectedResponseError)
    expect(proxy.requests).toHaveLength(1)
  })

  it("an error code this SDK does not know becomes UnexpectedResponseError naming it", async () => {
    const body = JSON.stringify({ error: { code: "brand_new_code", message: "Newer server." } })
    proxy.script({ answer: { status: 400, headers: { "request-id": "req_new" }, body } })
    const error = await failure(kassa.payments.get(paymentId))
    expect(error).toBeInstanceOf(UnexpectedResponseError)
    expect(error.message).toContain("brand_new_code")
    expect(error).toMatchObject({ status: 400, requestId: "req_new", body })
  })

  it("a known code without its fields does not pass for that class", async () => {
    const body = JSON.stringify({ error: { code: "order_reference_already_paid", message: "No payment_id." } })
    proxy.script({ answer: { status: 409, body } })
    expect(await failure(kassa.payments.create({ amount: 1000, order_reference: "x" }))).toBeInstanceOf(
      UnexpectedResponseError
    )
  })

  it("rate_limited without Retry-After is still RateLimitedError", async () => {
    proxy.script({ answer: { status: 429, body: JSON.stringify({ error: { code: "rate_limited", message: "m" } }) } })
    const error = await failure(kassa.payments.get(paymentId))
    expect(error).toBeInstanceOf(RateLimitedError)
    expect(error).toMatchObject({ status: 429, retryAfter: undefined })
  })

  it("http_error keeps the status it came with", async () => {
    proxy.script({ answer: { status: 413, body: JSON.stringify({ error: { code: "http_error", message: "Big." } }) } })
    const error = await failure(kassa.payments.create({ amount: 1000, order_reference: "x" }))
    expect(error).toBeInstanceOf(HttpError)
    expect(error).toMatchObject({ status: 413, message: "Big." })
  })

  it("a success whose body is not a payment becomes UnexpectedResponseError and is not retried", async () => {
    proxy.script({ answer: { status: 200, headers: { "content-type": "application/json" }, body: '{"id":1}' } })
    const error = await failure(new Kassa({ apiKey: "pk_test_x", baseUrl: proxy.baseUrl }).payments.get(paymentId))
    expect(error).toBeInstanceOf(UnexpectedResponseError)
    expect(error).toMatchObject({ status: 200, body: '{"id":1}' })
    expect(proxy.requests).toHaveLength(1)
  })

  it("a request the contract refuses is answered locally, as the server would, without sending it", async () => {
    const malformed = await failure(kassa.payments.get("not-a-payment-id"))
    expect(malformed).toBeInstanceOf(NotFoundError)
    expect(malformed).toMatchObject({ status: 404, requestId: undefined })
    const key = await failure(kassa.payments.create({ amount: 1000, order_reference: "x" }, { idempotencyKey: "ключ" }))
    expect(key).toBeInstanceOf(ValidationFailedError)
    expect(key).toMatchObject({ status: 422, fields: { "Idempotency-Key": [expect.any(String)] } })
    expect(proxy.requests).toHaveLength(0)
  })
})
