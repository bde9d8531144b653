/**
 * `kassa admin provider link|show|retire`: the Stripe account of an application's live payments. The key is read
 * from STRIPE_SECRET_KEY by default and is never printed whole.
 */
import type { OperatorSchemas } from "@kassa/core"
import * as Config from "effect/Config"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Redacted from "effect/Redacted"
import { fields } from "../../Output.ts"
import * as Settings from "../../Settings.ts"
import { answer, applicationId } from "./OperatorCall.ts"

type ProviderLink = typeof OperatorSchemas.ProviderLinkView.Encoded

const renderLink = (link: ProviderLink) =>
  fields([
    ["Provider", link.provider],
    ["Account", link.account_id],
    ["Key", link.key_display],
    ["Mode", link.livemode ? "live" : "test (Stripe test cards)"],
    ["Webhook endpoint", link.webhook_endpoint_id],
    ["Status", link.status],
    ["Linked at", link.linked_at],
    ["Retired at", link.retired_at]
  ])

const providerLink = Command.make(
  "link",
  {
    ...Settings.operator,
    applicationId,
    // From the environment by default, so the key stays out of shell history and the process list.
    secretKey: Flag.Redacted("secret-key").pipe(
      Flag.withDescription(
        "The Stripe secret or restricted key, sk_live_…/rk_live_… (sk_test_…/rk_test_… to rehearse) (env STRIPE_SECRET_KEY)"
      ),
      Flag.withFallbackConfig(Config.Redacted("STRIPE_SECRET_KEY"))
    )
  },
  (input) =>
    answer<ProviderLink>(
      input,
      "operatorProviderAccounts.link",
      (client) =>
        client.operatorProviderAccounts.link({
          params: { id: input.applicationId },
          payload: { provider: "stripe", secret_key: Redacted.value(input.secretKey) },
          responseMode: "response-only"
        }),
      (linked) =>
        `${renderLink(linked)}\n\nLinked. The key is stored encrypted and shown only as ${linked.key_display} from now on.`
    )
).pipe(
  Command.withDescription(
    "Link a Stripe account to an application: the key is checked with Stripe and a webhook endpoint is made there; a previous link is retired"
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
).pipe(Command.withDescription("Show the application's linked Stripe account (not_found when none)"))

const providerRetire = Command.make("retire", { ...Settings.operator, applicationId }, (input) =>
  answer<ProviderLink>(
    input,
    "operatorProviderAccounts.retire",
    (client) =>
      client.operatorProviderAccounts.retire({ params: { id: input.applicationId }, responseMode: "response-only" }),
    (retired) =>
      `${renderLink(retired)}\n\nRetired: new live payments are refused until another account is linked; payments it opened still settle.`
  )
).pipe(Command.withDescription("Retire the application's linked Stripe account"))

export const provider = Command.make("provider").pipe(
  Command.withDescription("The payment provider account (Stripe) of live payments: link, show, retire"),
  Command.withSubcommands([providerLink, providerShow, providerRetire])
)
