/**
 * The Mollie connector pointed at a fresh stateful fake Mollie for each test, over real HTTP, and the steps its tests
 * share: run an effect against it, take its failure, a link for a key, an open request, open and read a checkout.
 * `useMollieConnector()` registers the hooks, including the check after every test that Kassa never sent `testmode`
 * or `profileId`; `fake` and `receiver` are live bindings to the current ones.
 */
import { randomUUID } from "node:crypto"
import { Ids } from "@kassa/core"
import { Cause, DateTime, Duration, Effect, Exit, Layer, Redacted } from "effect"
import { afterAll, afterEach, beforeAll, beforeEach, expect } from "vitest"
import { ServerConfig } from "../../src/config/ServerConfig.ts"
import * as MollieConnector from "../../src/providers/MollieConnector.ts"
import { type LinkAccess, ProviderConnector, ProviderLinkId } from "../../src/providers/ProviderConnector.ts"
import { type FakeMollie, startFakeMollie } from "./FakeMollie.ts"
import { startReceiver, type WebhookReceiver } from "./WebhookReceiver.ts"

/** This test's fake Mollie (a new one before each test, closed after it). */
export let fake: FakeMollie
/** The file's webhook receiver (one per file; its requests are emptied before each test). */
export let receiver: WebhookReceiver

/** Puts another fake in place of the current one, which the hooks then settle and close after the test. */
export const replaceFake = (next: FakeMollie) => {
  fake = next
}

/** Registers the hooks: a receiver per file, a fake per test, and after each test the `testmode`/`profileId` check. */
export const useMollieConnector = () => {
  beforeAll(async () => {
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await receiver.close()
  })
  beforeEach(async () => {
    fake = await startFakeMollie({ minuteMs: 1 })
    receiver.requests.length = 0
  })
  afterEach(async () => {
    // Whatever a test did, Kassa never sent `testmode` or `profileId` (Mollie answers 422 with an API key).
    for (const request of fake.requests) {
      const body = typeof request.body === "object" && request.body !== null ? Object.keys(request.body) : []
      expect([...body, ...Object.keys(request.query)]).not.toContain("testmode")
      expect([...body, ...Object.keys(request.query)]).not.toContain("profileId")
    }
    await fake.settled()
    await fake.close()
  })
}

export const layerWith = (
  url: string,
  timeout: Duration.Duration,
  environment: "development" | "production" = "development"
) =>
  MollieConnector.layer.pipe(
    Layer.provide(ServerConfig.layerWith({ mollieApiUrl: url, environment })),
    Layer.provide(Layer.succeed(MollieConnector.CallTimeout, timeout))
  )

export const run = <A, E>(effect: Effect.Effect<A, E, ProviderConnector>, timeout = Duration.seconds(10)) =>
  Effect.runPromise(Effect.provide(effect, layerWith(fake.url, timeout)))

/** The failure (never a defect) the effect ends with. */
export const failureOf = <A, E>(effect: Effect.Effect<A, E, ProviderConnector>) =>
  run(Effect.exit(effect)).then((exit) => {
    if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got ${JSON.stringify(exit.value)}`)
    const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
    if (error === undefined) throw new Error(`expected a failure, got ${Cause.pretty(exit.cause)}`)
    return error.error
  })

export const linkFor = (key: string): LinkAccess => ({
  id: ProviderLinkId.make(randomUUID()),
  secretKey: Effect.succeed(Redacted.make(key)),
  endpointSecret: Effect.die("Mollie's pings are unsigned: no endpoint secret is ever opened")
})

export const connector = Effect.service(ProviderConnector)
const paymentId = () => Ids.PaymentId.make(randomUUID())
export const refundId = () => Ids.RefundId.make(randomUUID())

export const openRequest = (overrides: Record<string, unknown> = {}) => ({
  paymentId: paymentId(),
  amount: 2_500,
  currency: "EUR",
  method: "card",
  name: "Order 42",
  locale: "nl-NL",
  customerEmail: "ada@example.com",
  returnUrl: "https://kassa.example/checkout/p1/return",
  webhookUrl: receiver.url("/provider-webhooks/mollie/link"),
  expiresAt: DateTime.makeUnsafe(Date.now() + 3_600_000),
  idempotencyKey: randomUUID(),
  ...overrides
})

export const opened = async (link: LinkAccess, request = openRequest()) => {
  const answer = await run(Effect.flatMap(connector, (c) => c.open(link, request)))
  if (answer._tag !== "Opened") throw new Error(`not opened: ${JSON.stringify(answer)}`)
  return answer
}

export const readOf = (link: LinkAccess, id: string) => run(Effect.flatMap(connector, (c) => c.read(link, id)))
