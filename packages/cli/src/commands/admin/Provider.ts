/**
 * `kassa admin provider link|show|retire`: the payment provider account (Stripe or Mollie) of an application's live
 * payments. The key is read from the provider's usual variable by default (STRIPE_SECRET_KEY, MOLLIE_API_KEY) and is
 * never printed whole.
 */
import type { OperatorSchemas } from "@kassa/core"
import * as Config from "effect/Config"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { fields, reporting, usageError } from "../../Output.ts"
import * as Settings from "../../Settings.ts"
import { answer, applicationId } from "./OperatorCall.ts"

type ProviderLink = typeof OperatorSchemas.ProviderLinkView.Encoded
type Provider = typeof OperatorSchemas.LinkProvider.Type

const titles: Readonly<Record<Provider, string>> = { stripe: "Stripe", mollie: "Mollie" }
/** Where each provider's key is read from when `--secret-key` is not given. */
const keyVariables: Readonly<Record<Provider, string>> = { stripe: "STRIPE_SECRET_KEY", mollie: "MOLLIE_API_KEY" }

const renderLink = (link: ProviderLink) =>
  fields([
    ["Provider", titles[link.provider]],
    ["Account", link.account_id],
    ["Key", link.key_display],
    ["Mode", link.livemode ? "live" : `test (${titles[link.provider]}'s test payments)`],
    // Mollie has none: each payment names the link's webhook URL.
    ["Webhook endpoint", link.webhook_endpoint_id ?? "none (named on each payment)"],
    ["Status", link.status],
    ["Linked at", link.linked_at],
    ["Retired at", link.retired_at]
  ])

const providerLink = Command.make(
  "link",
  {
    ...Settings.operator,
    applicationId,
    provider: Flag.Literals("provider", ["stripe", "mollie"]).pipe(
      Flag.withDescription("The payment provider: stripe or mollie (default stripe)"),
      Flag.withDefault("stripe" as const)
    ),
    // From the environment by default, so the key stays out of shell history and the process list.
    secretKey: Flag.Redacted("secret-key").pipe(
      Flag.withDescription(
        "Stripe: the secret or restricted key, sk_live_…/rk_live_… (sk_test_…/rk_test_… to rehearse) (env STRIPE_SECRET_KEY). Mollie: the API key, live_… (test_… to rehearse) (env MOLLIE_API_KEY)"
      ),
      Flag.optional
    )
  },
  (input) =>
    Effect.gen(function* () {
      const variable = keyVariables[input.provider]
      const fromEnvironment = yield* Config.option(Config.Redacted(variable)).pipe(
        Effect.orElseSucceed(() => Option.none<Redacted.Redacted<string>>())
      )
      const secretKey = Option.orElse(input.secretKey, () => fromEnvironment)
      if (Option.isNone(secretKey))
        return yield* Effect.fail(usageError(`Give the ${titles[input.provider]} key with --secret-key or ${variable}`))
      return Redacted.value(secretKey.value)
    }).pipe(
      reporting(input.json),
      Effect.flatMap((secretKey) =>
        answer<ProviderLink>(
          input,
          "operatorProviderAccounts.link",
          (client) =>
            client.operatorProviderAccounts.link({
              params: { id: input.applicationId },
              payload: { provider: input.provider, secret_key: secretKey },
              responseMode: "response-only"
            }),
          (linked) =>
            `${renderLink(linked)}\n\nLinked. The key is stored encrypted and shown only as ${linked.key_display} from now on.`
        )
      )
    )
).pipe(
  Command.withDescription(
    "Link a Stripe or Mollie account to an application: the key is checked with the provider (and a webhook endpoint made at Stripe); a previous link, of either provider, is retired"
  )
)

const providerShow = Command.make("show", { ...Settings.operator, applicationId }, (input) =>
  answer<ProviderLink>(
    input,
    "operatorProviderAccounts.show",
    (client) =>
      client.operatorProviderAccounts.show({ params: { id: input.applicationId }, responseMode: "response-only" }),
    renderLink
  )
).pipe(Command.withDescription("Show the application's linked provider account (not_found when none)"))

const providerRetire = Command.make("retire", { ...Settings.operator, applicationId }, (input) =>
  answer<ProviderLink>(
    input,
    "operatorProviderAccounts.retire",
    (client) =>
      client.operatorProviderAccounts.retire({ params: { id: input.applicationId }, responseMode: "response-only" }),
    (retired) =>
      `${renderLink(retired)}\n\nRetired: new live payments are refused until another account is linked; payments it opened still settle.`
  )
).pipe(Command.withDescription("Retire the application's linked provider account"))

export const provider = Command.make("provider").pipe(
  Command.withDescription("The payment provider account (Stripe or Mollie) of live payments: link, show, retire"),
  Command.withSubcommands([providerLink, providerShow, providerRetire])
)
