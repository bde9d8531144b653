/**
 * The Stripe connector pointed at a fresh stateful fake Stripe for each test, over real HTTP, and the few steps its
 * tests share: open a session, read it, register an endpoint (whose secret then signs test events), sign a body.
 */
import { randomUUID } from "node:crypto"
import { Ids } from "@kassa/core"
import { DateTime, Duration, Effect, Exit, Layer, Redacted } from "effect"
import Stripe from "stripe"
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest"
import { ServerConfig } from "../../src/config/ServerConfig.ts"
import {
  type CheckoutReading,
  type LinkAccess,
  type OpenedCheckout,
  type OpenRequest,
  ProviderConnector,
  ProviderLinkId
} from "../../src/providers/ProviderConnector.ts"
import * as StripeConnector from "../../src/providers/StripeConnector.ts"
import { apiVersion } from "../../src/providers/StripeConnector.ts"
import { type FakeStripe, startFakeStripe } from "./FakeStripe.ts"
import { startReceiver, type WebhookReceiver } from "./WebhookReceiver.ts"

export interface Harness {
  readonly fake: () => FakeStripe
  readonly receiver: () => WebhookReceiver
  readonly run: <A, E>(effect: Effect.Effect<A, E, ProviderConnector>, timeout?: Duration.Duration) => Promise<A>
  /** The failure (never a defect) the effect ends with. */
  readonly failureOf: <A, E>(effect: Effect.Effect<A, E, ProviderConnector>) => Promise<E>
  readonly link: (key?: string) => LinkAccess
  readonly openRequest: (overrides?: Partial<OpenRequest>) => OpenRequest
  readonly open: (link: LinkAccess, request?: OpenRequest) => Promise<OpenedCheckout>
  readonly read: (link: LinkAccess, checkoutId: string) => Promise<CheckoutReading>
  /** Registers the link's endpoint at the fake; its secret is then the link's endpoint secret. */
  readonly register: (link: LinkAccess) => Promise<void>
  /** A `Stripe-Signature` for `body`: the registered endpoint's secret and now, unless told otherwise. */
  readonly sign: (body: string, options?: { readonly secret?: string; readonly timestamp?: number }) => string
}

export const connector = Effect.service(ProviderConnector)

/** Registers the hooks (a fake per test, one receiver per file) and answers the shared steps. */
export const useStripeConnector = (): Harness => {
  let fake: FakeStripe | undefined
  let receiver: WebhookReceiver | undefined
  let endpointSecret = ""
  beforeAll(async () => {
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await receiver?.close()
  })
  beforeEach(async () => {
    fake = await startFakeStripe({ apiVersion })
    endpointSecret = ""
    if (receiver !== undefined) receiver.requests.length = 0
  })
  afterEach(async () => {
    await fake?.settled()
    await fake?.close()
  })
  const current = () => {
    if (fake === undefined) throw new Error("no fake Stripe outside a test")
    return fake
  }

  const run = <A, E>(effect: Effect.Effect<A, E, ProviderConnector>, timeout = Duration.seconds(10)) =>
    Effect.runPromise(
      Effect.provide(
        effect,
        StripeConnector.layer.pipe(
          Layer.provide(ServerConfig.layerWith({ stripeApiUrl: current().url })),
          Layer.provide(Layer.succeed(StripeConnector.CallTimeout, timeout))
        )
      )
    )

  const failureOf = <A, E>(effect: Effect.Effect<A, E, ProviderConnector>) =>
    run(Effect.exit(effect)).then((exit) => {
      if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got ${JSON.stringify(exit.value)}`)
      const failed = exit.cause.reasons.find((reason) => reason._tag === "Fail")
      if (failed === undefined) throw new Error(`expected a failure, got a defect: ${String(exit.cause)}`)
      return failed.error
    })

  const link = (key = current().secretKey): LinkAccess => ({
    id: ProviderLinkId.make(randomUUID()),
    secretKey: Effect.succeed(Redacted.make(key)),
    endpointSecret: Effect.sync(() => Redacted.make(endpointSecret))
  })

  const openRequest = (overrides: Partial<OpenRequest> = {}): OpenRequest => {
    const paymentId = Ids.PaymentId.make(randomUUID())
    return {
      paymentId,
      amount: 2_500,
      currency: "EUR",
      method: "card",
      name: "Order 42",
      locale: "nl-NL",
      customerEmail: "ada@example.com",
      returnUrl: `http://127.0.0.1:9/checkout/${paymentId}/return`,
      webhookUrl: `http://127.0.0.1:9/provider-webhooks/stripe/${randomUUID()}`,
      expiresAt: DateTime.makeUnsafe((current().now() + 3_600) * 1000),
      idempotencyKey: `create-${paymentId}`,
      ...overrides
    }
  }

  const open = async (access: LinkAccess, request = openRequest()) => {
    const answer = await run(Effect.flatMap(connector, (c) => c.open(access, request)))
    if (answer._tag !== "Opened") throw new Error(`expected a session, got ${answer._tag}`)
    return answer
  }

  const read = async (access: LinkAccess, checkoutId: string) => {
    const answer = await run(Effect.flatMap(connector, (c) => c.read(access, checkoutId)))
    if (answer._tag !== "Checkout") throw new Error(`expected a checkout, got ${answer._tag}`)
    return answer
  }

  const register = async (access: LinkAccess) => {
    const url = `${receiver?.url("/stripe")}/${access.id}`
    const answer = await run(Effect.flatMap(connector, (c) => c.registerWebhook(access, url)))
    if (answer._tag !== "Webhook") throw new Error(answer._tag)
    endpointSecret = Redacted.value(answer.secret)
  }

  const sign = (body: string, options: { readonly secret?: string; readonly timestamp?: number } = {}) =>
    Stripe.webhooks.generateTestHeaderString({
      payload: body,
      secret: options.secret ?? endpointSecret,
      ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp })
    })

  return {
    fake: current,
    receiver: () => {
      if (receiver === undefined) throw new Error("no receiver outside a test")
      return receiver
    },
    run,
    failureOf,
    link,
    openRequest,
    open,
    read,
    register,
    sign
  }
}
