/**
 * Every connector call is counted and timed by provider, operation and outcome (issue 21 §7 and §10: before, only
 * the test-mode simulator's create was). `ProviderConnectors.observed` wraps a connector's operations; here it wraps a
 * scripted connector (the Stripe and Mollie connectors are exercised through their fakes elsewhere), and the
 * process-wide counters are read before and after.
 */
import { describe, expect, it } from "@effect/vitest"
import { Ids } from "@kassa/core"
import { DateTime, Duration, Effect, Metric } from "effect"
import * as Metrics from "../src/observability/Metrics.ts"
import {
  type Connector,
  type LinkAccess,
  noAnswer,
  ProviderLinkId,
  ProviderRefused
} from "../src/providers/ProviderConnector.ts"
import { observed } from "../src/providers/ProviderConnectors.ts"

const unused = () => Effect.die("not called in this test")

/** A connector that answers each operation as scripted; `parseEvent` reads no provider. */
const scripted: Connector = {
  provider: "mollie",
  checkoutWindow: { min: Duration.minutes(1), max: Duration.days(1) },
  verifyLink: unused,
  registerWebhook: () => Effect.succeed({ _tag: "PerPayment" as const }),
  retireWebhook: unused,
  open: () =>
    Effect.succeed({
      _tag: "Opened" as const,
      checkoutId: "c_1",
      url: "https://pay.example/c_1",
      expiresAt: DateTime.makeUnsafe(0),
      providerPaymentId: "c_1"
    }),
  read: () => Effect.succeed(noAnswer("timeout")),
  findCheckouts: unused,
  close: unused,
  refund: () => Effect.fail(new ProviderRefused({ message: "no", field: null, code: null, status: 409 })),
  readRefund: unused,
  listRefunds: unused,
  parseEvent: () => Effect.die("parsing is not a provider call")
}

const link: LinkAccess = {
  id: ProviderLinkId.make(crypto.randomUUID()),
  secretKey: Effect.die("unused"),
  endpointSecret: Effect.die("unused")
}

const count = (operation: string, outcome: string) =>
  Effect.map(
    Metric.value(Metric.withAttributes(Metrics.providerCalls, { provider: "mollie", operation, outcome })),
    (state) => state.count
  )

describe("ProviderConnectors.observed", () => {
  it.effect("counts each call by provider, operation and outcome: an answer's tag, no answer, a refusal", () =>
    Effect.gen(function* () {
      const connector = observed(scripted)
      const before = [
        yield* count("open", "Opened"),
        yield* count("read", "NoAnswer"),
        yield* count("refund", "refused"),
        yield* count("registerWebhook", "PerPayment")
      ]
      yield* connector.open(link, {} as never)
      yield* connector.read(link, "c_1")
      yield* Effect.exit(
        connector.refund(link, {
          refundId: Ids.RefundId.make(crypto.randomUUID()),
          providerPaymentId: "c_1",
          amount: 1,
          currency: "EUR"
        })
      )
      yield* connector.registerWebhook(link, "https://kassa.example/hook")
      const after = [
        yield* count("open", "Opened"),
        yield* count("read", "NoAnswer"),
        yield* count("refund", "refused"),
        yield* count("registerWebhook", "PerPayment")
      ]
      expect(after.map((value, index) => value - (before[index] ?? 0))).toEqual([1, 1, 1, 1])
    })
  )

  it.effect("keeps what is not a provider call as it is", () =>
    Effect.sync(() => {
      const connector = observed(scripted)
      expect(connector.parseEvent).toBe(scripted.parseEvent)
      expect(connector.provider).toBe("mollie")
      expect(connector.checkoutWindow).toBe(scripted.checkoutWindow)
    })
  )
})
