/**
 * The Stripe connector against the stateful fake over real HTTP (issue 12 §1): every operation in the core's
 * vocabulary, refusals (a refused key names `secret_key`), "no answer" for 5xx, 429 and timeouts (never a failure,
 * never a refusal), and Kassa's own Idempotency-Key on every write and the replay it buys. Events (Stripe's
 * signature, malformed bodies, disputes) are in StripeConnectorEvents.test; readings and the create's checks in
 * StripeConnectorReadings.test.
 */
import { randomUUID } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Ids } from "@kassa/core"
import { Cause, ConfigProvider, DateTime, Duration, Effect, Exit, Layer, Redacted } from "effect"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { ServerConfig } from "../src/config/ServerConfig.ts"
import {
  type LinkAccess,
  ProviderConnector,
  ProviderLinkId,
  type ProviderRefused
} from "../src/providers/ProviderConnector.ts"
import * as StripeConnector from "../src/providers/StripeConnector.ts"
import { apiVersion, stripeLocale, subscribedEvents } from "../src/providers/StripeConnector.ts"
import { type FakeStripe, startFakeStripe } from "./support/FakeStripe.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

let fake: FakeStripe
let receiver: WebhookReceiver

beforeAll(async () => {
  receiver = await startReceiver()
})
afterAll(async () => {
  await receiver.close()
})
beforeEach(async () => {
  fake = await startFakeStripe({ apiVersion })
  receiver.requests.length = 0
})
afterEach(async () => {
  await fake.settled()
  await fake.close()
})

/** Runs an effect with the connector pointed at the fake; "no answer" tests shorten the 10 s bound. */
const run = <A, E>(effect: Effect.Effect<A, E, ProviderConnector>, timeout = Duration.seconds(10)) =>
  Effect.runPromise(
    Effect.provide(
      effect,
      StripeConnector.layer.pipe(
        Layer.provide(ServerConfig.layerWith({ stripeApiUrl: fake.url })),
        Layer.provide(Layer.succeed(StripeConnector.CallTimeout, timeout))
      )
    )
  )

const failureOf = <A, E>(effect: Effect.Effect<A, E, ProviderConnector>) =>
  run(Effect.exit(effect)).then((exit) => {
    if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got ${JSON.stringify(exit.value)}`)
    const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
    if (error === undefined) throw new Error("expected a failure, got a defect")
    return error.error
  })

const linkFor = (key: string, id = ProviderLinkId.make(randomUUID())): LinkAccess => ({
  id,
  secretKey: Effect.succeed(Redacted.make(key)),
  endpointSecret: Effect.succeed(Redacted.make("whsec_unused"))
})

const connector = Effect.service(ProviderConnector)

const paymentId = () => Ids.PaymentId.make(randomUUID())

const openRequest = (id = paymentId(), overrides: Record<string, unknown> = {}) => ({
  paymentId: id,
  amount: 2_500,
  currency: "EUR",
  method: "card",
  name: "Order 42",
  locale: "nl-NL",
  customerEmail: "ada@example.com",
  returnUrl: `http://127.0.0.1:9/checkout/${id}/return`,
  webhookUrl: `http://127.0.0.1:9/provider-webhooks/stripe/${randomUUID()}`,
  expiresAt: DateTime.makeUnsafe((fake.now() + 3_600) * 1000),
  idempotencyKey: `create-${id}`,
  ...overrides
})

const opened = async (link: LinkAccess, request = openRequest()) => {
  const answer = await run(Effect.flatMap(connector, (c) => c.open(link, request)))
  if (answer._tag !== "Opened") throw new Error(`expected a session, got ${answer._tag}`)
  return answer
}

const readState = async (link: LinkAccess, sessionId: string) => {
  const answer = await run(Effect.flatMap(connector, (c) => c.read(link, sessionId)))
  if (answer._tag !== "Checkout") throw new Error(`expected a checkout, got ${answer._tag}`)
  return answer
}

describe("linking: verifyLink, registerWebhook, retireWebhook", () => {
  it("a key Stripe knows opens its account; the key's prefix says live or test", async () => {
    const test = await run(Effect.flatMap(connector, (c) => c.verifyLink(Redacted.make(fake.secretKey))))
    expect(test).toEqual({ _tag: "Account", accountId: fake.accountId, livemode: false })
    const live = fake.addAccount({ livemode: true, restricted: true })
    const answer = await run(Effect.flatMap(connector, (c) => c.verifyLink(Redacted.make(live.key))))
    expect(answer).toEqual({ _tag: "Account", accountId: live.accountId, livemode: true })
    const request = fake.requests.at(-1)
    expect(request?.path).toBe("/v1/account")
    expect(request?.stripeVersion).toBe(apiVersion)
  })

  it("a key Stripe refuses (401) is refused on secret_key, and the message does not carry the key", async () => {
    const key = `sk_live_${"x".repeat(40)}`
    const refused = (await failureOf(
      Effect.flatMap(connector, (c) => c.verifyLink(Redacted.make(key)))
    )) as ProviderRefused
    expect(refused._tag).toBe("ProviderRefused")
    expect(refused.field).toBe("secret_key")
    expect(refused.status).toBe(401)
    expect(refused.message).not.toContain(key)
  })

  it("403 (a restricted key without the permission) is refused on secret_key too, and says which permissions", async () => {
    fake.inject({ method: "GET", path: "/v1/account" }, { kind: "status", status: 403 })
    const refused = (await failureOf(
      Effect.flatMap(connector, (c) => c.verifyLink(Redacted.make(fake.secretKey)))
    )) as ProviderRefused
    expect(refused.field).toBe("secret_key")
    expect(refused.message).toContain("Webhook Endpoints")
  })

  it("registers an endpoint for §10's events at the pinned version, under Kassa's key, and retires it", async () => {
    const link = linkFor(fake.secretKey)
    const url = `${receiver.url("/stripe")}/${link.id}`
    const registered = await run(Effect.flatMap(connector, (c) => c.registerWebhook(link, url)))
    if (registered._tag !== "Webhook") throw new Error(registered._tag)
    expect(Redacted.value(registered.secret)).toMatch(/^whsec_/)
    expect(registered.livemode).toBe(false)
    const request = fake.requests.at(-1)
    expect(request?.idempotencyKey).toBe(`kassa-webhook-${link.id}`)
    expect(request?.params).toMatchObject({ url, api_version: apiVersion, enabled_events: [...subscribedEvents] })

    expect(await run(Effect.flatMap(connector, (c) => c.retireWebhook(link, registered.endpointId)))).toEqual({
      _tag: "Retired"
    })
    expect(fake.requests.at(-1)).toMatchObject({ method: "DELETE", status: 200 })
    // Already gone (deleted twice, or in Stripe's dashboard): still retired.
    expect(await run(Effect.flatMap(connector, (c) => c.retireWebhook(link, registered.endpointId)))).toEqual({
      _tag: "Retired"
    })
    expect(fake.requests.at(-1)?.status).toBe(404)
  })
})

describe("checkout: open, read, close", () => {
  it("opens §10's session and replays it for the same Idempotency-Key", async () => {
    const link = linkFor(fake.secretKey)
    const request = openRequest()
    const first = await opened(link, request)
    const sent = fake.requests.at(-1)
    expect(sent?.idempotencyKey).toBe(request.idempotencyKey)
    expect(sent?.params).toMatchObject({
      mode: "payment",
      line_items: [
        { price_data: { currency: "eur", unit_amount: "2500", product_data: { name: "Order 42" } }, quantity: "1" }
      ],
      client_reference_id: request.paymentId,
      metadata: { kassa_payment_id: request.paymentId },
      payment_intent_data: { metadata: { kassa_payment_id: request.paymentId } },
      success_url: request.returnUrl,
      cancel_url: request.returnUrl,
      expires_at: String(fake.now() + 3_600),
      customer_email: "ada@example.com",
      locale: "nl",
      allowed_payment_method_types: ["card"]
    })
    expect(first.url).toBe(fake.session(first.checkoutId).url)
    // Stripe makes the PaymentIntent only when the customer pays.
    expect(first.providerPaymentId).toBeNull()
    expect(DateTime.toEpochMillis(first.expiresAt)).toBe((fake.now() + 3_600) * 1000)

    const again = await opened(link, request)
    expect(again.checkoutId).toBe(first.checkoutId)
    expect(fake.requests.at(-1)?.replayed).toBe(true)
    expect(fake.sessions()).toHaveLength(1)
  })

  it("a locale Stripe does not know is left out; no e-mail, no customer_email", async () => {
    expect(stripeLocale("pt-BR")).toBe("pt-BR")
    expect(stripeLocale("de-AT")).toBe("de")
    expect(stripeLocale("xx")).toBeUndefined()
    await opened(linkFor(fake.secretKey), openRequest(paymentId(), { locale: "xx", customerEmail: null }))
    const params = fake.requests.at(-1)?.params ?? {}
    expect(params.locale).toBeUndefined()
    expect(params.customer_email).toBeUndefined()
  })

  it("reads Open, then Paid with the customer and the payment intent", async () => {
    const link = linkFor(fake.secretKey)
    const { checkoutId: sessionId } = await opened(link)
    expect((await readState(link, sessionId)).state).toEqual({ _tag: "Open" })
    fake.pay(sessionId, { name: "Ada Lovelace", email: "ada@example.com", phone: "+31 20 123" })
    const paid = await readState(link, sessionId)
    expect(paid.state).toEqual({
      _tag: "Paid",
      customer: { name: "Ada Lovelace", email: "ada@example.com", phone: "+31 20 123" }
    })
    expect(paid.providerPaymentId).toBe(fake.session(sessionId).payment_intent)
    expect(paid.providerPaymentId).toMatch(/^pi_/)
  })

  it("a delayed method reads Unpaid, then Failed when the payment intent failed (expand=payment_intent)", async () => {
    const link = linkFor(fake.secretKey)
    const { checkoutId: sessionId } = await opened(link)
    fake.pay(sessionId, {}, { delayed: true })
    expect((await readState(link, sessionId)).state).toEqual({ _tag: "Unpaid" })
    expect(fake.requests.at(-1)?.params).toEqual({ expand: ["payment_intent.latest_charge"] })
    fake.settleDelayed(sessionId, "failed")
    expect((await readState(link, sessionId)).state).toEqual({ _tag: "Failed" })
  })

  it("a delayed method that succeeds reads Paid", async () => {
    const link = linkFor(fake.secretKey)
    const { checkoutId: sessionId } = await opened(link)
    fake.pay(sessionId, {}, { delayed: true })
    fake.settleDelayed(sessionId, "succeeded")
    expect((await readState(link, sessionId)).state._tag).toBe("Paid")
  })

  it("close expires an open session; on a paid one it answers Paid (read instead); Stripe's own expiry reads Expired", async () => {
    const link = linkFor(fake.secretKey)
    const open = await opened(link)
    const closed = await run(Effect.flatMap(connector, (c) => c.close(link, open.checkoutId)))
    expect(closed).toMatchObject({ _tag: "Checkout", state: { _tag: "Expired" } })
    expect(fake.requests.at(-1)?.idempotencyKey).toBe(`kassa-expire-${open.checkoutId}`)

    const paid = await opened(link)
    fake.pay(paid.checkoutId)
    const answer = await run(Effect.flatMap(connector, (c) => c.close(link, paid.checkoutId)))
    expect(answer).toMatchObject({ _tag: "Checkout", state: { _tag: "Paid" } })
    expect(fake.requests.at(-2)).toMatchObject({ path: `/v1/checkout/sessions/${paid.checkoutId}/expire`, status: 400 })
    expect(fake.requests.at(-1)).toMatchObject({ method: "GET", path: `/v1/checkout/sessions/${paid.checkoutId}` })

    const late = await opened(link)
    fake.advance(3_601)
    expect((await readState(link, late.checkoutId)).state).toEqual({ _tag: "Expired" })
  })

  it("a session of another account is refused (404), not read as anything", async () => {
    const { checkoutId: sessionId } = await opened(linkFor(fake.secretKey))
    const other = linkFor(fake.addAccount().key)
    const refused = (await failureOf(Effect.flatMap(connector, (c) => c.read(other, sessionId)))) as ProviderRefused
    expect(refused).toMatchObject({ _tag: "ProviderRefused", status: 404, code: "resource_missing", field: null })
  })
})

describe("refunds", () => {
  const paidIntent = async (link: LinkAccess) => {
    const { checkoutId: sessionId } = await opened(link)
    fake.pay(sessionId)
    return String(fake.session(sessionId).payment_intent)
  }

  it("refund sends Kassa's id as metadata and Idempotency-Key; a repeat replays the same refund", async () => {
    const link = linkFor(fake.secretKey)
    const intent = await paidIntent(link)
    const refundId = Ids.RefundId.make(randomUUID())
    const request = { refundId, providerPaymentId: intent, amount: 1_000, currency: "EUR" }
    const answer = await run(Effect.flatMap(connector, (c) => c.refund(link, request)))
    if (answer._tag !== "Refund") throw new Error(answer._tag)
    expect(answer.kassaMade).toBe(true)
    expect(answer.refund).toMatchObject({ refund_id: refundId, amount: 1_000, status: "succeeded" })
    expect(fake.requests.at(-1)).toMatchObject({
      idempotencyKey: refundId,
      params: { metadata: { kassa_refund_id: refundId } }
    })
    const again = await run(Effect.flatMap(connector, (c) => c.refund(link, request)))
    expect(again).toEqual(answer)
    expect(fake.requests.at(-1)?.replayed).toBe(true)
  })

  it("readRefund: pending, then failed; a refund made in Stripe's dashboard takes the id given", async () => {
    const link = linkFor(fake.secretKey)
    const intent = await paidIntent(link)
    fake.nextRefundStatus("pending")
    const refundId = Ids.RefundId.make(randomUUID())
    const made = await run(
      Effect.flatMap(connector, (c) =>
        c.refund(link, { refundId, providerPaymentId: intent, amount: 500, currency: "EUR" })
      )
    )
    if (made._tag !== "Refund") throw new Error(made._tag)
    expect(made.refund.status).toBe("pending")
    fake.settleRefund(made.refund.provider_refund_id, "failed")
    const unknownAs = Ids.RefundId.make(randomUUID())
    const failed = await run(
      Effect.flatMap(connector, (c) =>
        c.readRefund(link, { providerRefundId: made.refund.provider_refund_id, providerPaymentId: intent }, unknownAs)
      )
    )
    expect(failed).toMatchObject({ _tag: "Refund", kassaMade: true, refund: { refund_id: refundId, status: "failed" } })

    const outside = fake.refundInDashboard(intent, 300)
    const read = await run(
      Effect.flatMap(connector, (c) =>
        c.readRefund(link, { providerRefundId: String(outside.id), providerPaymentId: null }, unknownAs)
      )
    )
    expect(read).toMatchObject({
      _tag: "Refund",
      kassaMade: false,
      refund: { refund_id: unknownAs, amount: 300, provider_refund_id: outside.id }
    })
  })

  it("a refund over the refundable amount is refused with Stripe's code", async () => {
    const link = linkFor(fake.secretKey)
    const intent = await paidIntent(link)
    const refused = (await failureOf(
      Effect.flatMap(connector, (c) =>
        c.refund(link, {
          refundId: Ids.RefundId.make(randomUUID()),
          providerPaymentId: intent,
          amount: 999_999,
          currency: "EUR"
        })
      )
    )) as ProviderRefused
    expect(refused).toMatchObject({ status: 400, code: "amount_too_large", field: null })
  })
})

describe("no answer is its own outcome", () => {
  it("500 → unavailable, 429 → rate_limited, for reads and writes alike; nothing is refused", async () => {
    const link = linkFor(fake.secretKey)
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "status", status: 500 })
    expect(await run(Effect.flatMap(connector, (c) => c.open(link, openRequest())))).toEqual({
      _tag: "NoAnswer",
      reason: "unavailable"
    })
    fake.inject({ method: "GET", path: "/v1/account" }, { kind: "status", status: 429 })
    expect(await run(Effect.flatMap(connector, (c) => c.verifyLink(Redacted.make(fake.secretKey))))).toEqual({
      _tag: "NoAnswer",
      reason: "rate_limited"
    })
    fake.inject({ method: "POST", path: /^\/v1\/refunds$/ }, { kind: "status", status: 503 })
    expect(
      await run(
        Effect.flatMap(connector, (c) =>
          c.refund(link, {
            refundId: Ids.RefundId.make(randomUUID()),
            providerPaymentId: "pi_x",
            amount: 1,
            currency: "EUR"
          })
        )
      )
    ).toEqual({ _tag: "NoAnswer", reason: "unavailable" })
  })

  it("a Stripe that never answers → timeout; one that created the session first replays it on the retry", async () => {
    const link = linkFor(fake.secretKey)
    fake.inject({ method: "GET", path: /^\/v1\/checkout\/sessions\// }, { kind: "hang" })
    const { checkoutId: sessionId } = await opened(link)
    expect(
      await run(
        Effect.flatMap(connector, (c) => c.read(link, sessionId)),
        Duration.millis(300)
      )
    ).toEqual({
      _tag: "NoAnswer",
      reason: "timeout"
    })

    const request = openRequest()
    fake.inject({ method: "POST", path: "/v1/checkout/sessions" }, { kind: "hang-after" })
    expect(
      await run(
        Effect.flatMap(connector, (c) => c.open(link, request)),
        Duration.millis(300)
      )
    ).toEqual({
      _tag: "NoAnswer",
      reason: "timeout"
    })
    const retried = await opened(link, request)
    expect(fake.requests.at(-1)?.replayed).toBe(true)
    expect(fake.sessions().filter((session) => session.id === retried.checkoutId)).toHaveLength(1)
  })

  it("the server's bound is 10 s (decisions §10); a test may shorten it, a production start refuses that", async () => {
    // The bound the server's connector takes when nothing shortens it (`layer` reads it; LivePayments shortens it).
    expect(Duration.toMillis(Effect.runSync(Effect.service(StripeConnector.CallTimeout)))).toBe(10_000)
    const link = linkFor(fake.secretKey)
    fake.inject({ method: "GET", path: /^\/v1\/checkout\/sessions\// }, { kind: "hang" })
    const { checkoutId: sessionId } = await opened(link)
    const shortened = Layer.succeed(StripeConnector.CallTimeout, Duration.millis(300))
    const read = Effect.flatMap(connector, (c) => c.read(link, sessionId))
    expect(
      await Effect.runPromise(
        Effect.provide(
          read,
          StripeConnector.layer.pipe(
            Layer.provide(ServerConfig.layerWith({ stripeApiUrl: fake.url })),
            Layer.provide(shortened)
          )
        )
      )
    ).toEqual({ _tag: "NoAnswer", reason: "timeout" })
    const production = await Effect.runPromise(
      Effect.exit(
        Effect.provide(
          read,
          StripeConnector.layer.pipe(
            Layer.provide(ServerConfig.layerWith({ stripeApiUrl: fake.url, environment: "production" })),
            Layer.provide(shortened)
          )
        )
      )
    )
    expect(Exit.isFailure(production) && Cause.pretty(production.cause)).toContain("for tests only")
  })

  it("a Stripe that is not there at all → unavailable", async () => {
    const link = linkFor(fake.secretKey)
    await fake.close()
    expect(await run(Effect.flatMap(connector, (c) => c.read(link, "cs_test_gone")))).toEqual({
      _tag: "NoAnswer",
      reason: "unavailable"
    })
    fake = await startFakeStripe({ apiVersion })
  })
})

describe("KASSA_STRIPE_API_URL", () => {
  /** The settings a start with `env` gets, or the text of its refusal. */
  const load = (env: Record<string, string>) =>
    Effect.runPromiseExit(
      Effect.provide(Effect.service(ServerConfig), ServerConfig.layer).pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
      )
    ).then((exit) => (Exit.isFailure(exit) ? String(exit.cause) : exit.value.stripeApiUrl))
  const production = {
    KASSA_ENV: "production",
    KASSA_ADMIN_TOKEN: "a".repeat(32),
    KASSA_SECRET_KEY: "b".repeat(32),
    KASSA_ALLOW_EMBEDDED: "1"
  }

  it("defaults to https://api.stripe.com; http is refused in production only; a path or another scheme is refused", async () => {
    expect(await load({})).toBe("https://api.stripe.com")
    expect(await load({ KASSA_STRIPE_API_URL: "http://127.0.0.1:12111/" })).toBe("http://127.0.0.1:12111")
    expect(await load({ ...production, KASSA_STRIPE_API_URL: "http://127.0.0.1:12111" })).toContain(
      "KASSA_STRIPE_API_URL must be https:// in production"
    )
    expect(await load({ ...production, KASSA_STRIPE_API_URL: "https://stripe.internal:8443" })).toBe(
      "https://stripe.internal:8443"
    )
    expect(await load({ KASSA_STRIPE_API_URL: "https://api.stripe.com/v1" })).toContain(
      "KASSA_STRIPE_API_URL must be an https:// address with no path"
    )
    expect(await load({ KASSA_STRIPE_API_URL: "ftp://api.stripe.com" })).toContain("KASSA_STRIPE_API_URL")
  })
})

describe("start-up", () => {
  it("the SDK is imported on first use only: no server module imports anything of it but types", () => {
    // Its import costs ~0.3 s of CPU per process (docs/decisions.md, issue 23), which a server with no Stripe link
    // (and every test file that starts a server) should not pay.
    const src = join(import.meta.dirname, "..", "src")
    const files = readdirSync(src, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".ts"))
    const imports = files.flatMap((file) =>
      [
        ...readFileSync(join(src, file), "utf8").matchAll(/^import\s+(type\s+)?[^"]*?from\s+"stripe(?:\/[^"]*)?"/gm)
      ].map((found) => ({ file, typeOnly: found[1] !== undefined }))
    )
    expect(imports.map(({ file }) => file)).toContain("providers/StripeConnector.ts")
    expect(imports.filter(({ typeOnly }) => !typeOnly)).toEqual([])
  })
})
