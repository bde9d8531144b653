/**
 * The connectors by provider (decisions §10, §11): a link names its provider, and everything that talks to a
 * provider asks this registry for that link's connector. Every call through it is observed here, once for every
 * connector: a span and `kassa_provider_calls_total` / `kassa_provider_call_duration_seconds` by provider, operation
 * and outcome (issue 21 §10: before, only the test-mode simulator's create was counted).
 */
import { Context, Effect, Layer } from "effect"
import * as ProviderCalls from "../observability/ProviderCalls.ts"
import * as MollieConnector from "./MollieConnector.ts"
import type { Connector, ProviderName } from "./ProviderConnector.ts"
import * as StripeConnector from "./StripeConnector.ts"

/** An answer's outcome label: its tag (`Opened`, `NoAnswer`, `Checkout`…). */
const tagOf = (answer: unknown): string =>
  typeof answer === "object" && answer !== null && "_tag" in answer && typeof answer._tag === "string"
    ? answer._tag
    : "answer"

/** The connector with each provider call observed; `parseEvent` reads no provider and is passed through. */
export const observed = (connector: Connector): Connector => {
  const watch =
    <Args extends ReadonlyArray<unknown>, A, E>(operation: string, call: (...args: Args) => Effect.Effect<A, E>) =>
    (...args: Args): Effect.Effect<A, E> =>
      ProviderCalls.observe(connector.provider, operation, call(...args), tagOf)
  return {
    ...connector,
    verifyLink: watch("verifyLink", connector.verifyLink),
    registerWebhook: watch("registerWebhook", connector.registerWebhook),
    retireWebhook: watch("retireWebhook", connector.retireWebhook),
    open: watch("open", connector.open),
    read: watch("read", connector.read),
    findCheckouts: watch("findCheckouts", connector.findCheckouts),
    close: watch("close", connector.close),
    refund: watch("refund", connector.refund),
    readRefund: watch("readRefund", connector.readRefund),
    listRefunds: watch("listRefunds", connector.listRefunds)
  }
}

export class ProviderConnectors extends Context.Service<
  ProviderConnectors,
  {
    /** The connector of a link's provider. */
    readonly of: (provider: ProviderName) => Connector
  }
>()("@kassa/server/providers/ProviderConnectors") {
  static readonly layer = Layer.effect(
    ProviderConnectors,
    Effect.gen(function* () {
      const connectors: Readonly<Record<ProviderName, Connector>> = {
        stripe: observed(yield* StripeConnector.make),
        mollie: observed(yield* MollieConnector.make)
      }
      return ProviderConnectors.of({ of: (provider) => connectors[provider] })
    })
  )
}
