/** `kassa admin payments refund`: refunding a live payment through its payment provider, as service staff. */
import type { Payment } from "@kassa/core"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import { fields } from "../../Output.ts"
import * as Settings from "../../Settings.ts"
import { answer, type Request, some } from "./OperatorCall.ts"

const paymentsRefund = Command.make(
  "refund",
  {
    ...Settings.operator,
    paymentId: Argument.String("payment-id").pipe(Argument.withDescription("The live payment's id")),
    amount: Flag.Int("amount").pipe(
      Flag.withDescription("Minor units to refund (default: everything still refundable)"),
      Flag.optional
    ),
    reason: Flag.String("reason").pipe(Flag.withDescription("Why, at most 255 characters"), Flag.optional)
  },
  (input) =>
    answer<typeof Payment.Payment.Encoded>(
      input,
      "operatorPayments.refund",
      (client) =>
        client.operatorPayments.refund({
          params: { id: input.paymentId },
          payload: { ...some("amount", input.amount), ...some("reason", input.reason) } as Request<
            "operatorPayments",
            "refund"
          >["payload"],
          responseMode: "response-only"
        }),
      (refunded) => {
        const newest = refunded.refunds.at(-1)
        const outcome =
          newest?.status === "succeeded"
            ? "The payment provider refunded it."
            : newest?.status === "failed"
              ? "The payment provider refused it; the amount is refundable again."
              : "The payment provider has not answered yet; Kassa asks again in the background (the refund stays pending)."
        return `${fields([
          ["Payment", refunded.id],
          ["Status", refunded.status],
          ["Refunded", `${refunded.refunded_amount} of ${refunded.amount} ${refunded.currency} (minor units)`],
          ["Refund", newest?.id ?? null],
          ["Refund status", newest?.status ?? null],
          ["Refund amount", newest === undefined ? null : String(newest.amount)]
        ])}\n\n${outcome}`
      }
    )
).pipe(
  Command.withDescription(
    "Refund a live payment through its payment provider (Stripe or Mollie), as service staff; audited like the dashboard's"
  )
)

export const payments = Command.make("payments").pipe(
  Command.withDescription("Live payments: refund"),
  Command.withSubcommands([paymentsRefund])
)
