/** `kassa payments create|get|list|cancel|refund|simulate`: the merchant API. */
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { call, renderPayment, renderPayments } from "../Merchant.ts"
import { output, reporting } from "../Output.ts"
import * as Settings from "../Settings.ts"

const paymentId = Argument.String("payment-id").pipe(Argument.withDescription("The payment's id"))
const idempotencyKey = Flag.String("idempotency-key").pipe(
  Flag.withDescription("The Idempotency-Key to send (default: a new random one)"),
  Flag.optional
)
const optionalString = (name: string, description: string) =>
  Flag.String(name).pipe(Flag.withDescription(description), Flag.optional)

/** `{ key: value }` when the option holds a value, `{}` otherwise (for exact optional properties). */
const some = <K extends string, A>(key: K, option: Option.Option<A>): { [P in K]?: A } =>
  Option.isSome(option) ? ({ [key]: option.value } as { [P in K]?: A }) : {}

const create = Command.make(
  "create",
  {
    ...Settings.merchant,
    amount: Flag.Int("amount").pipe(Flag.withDescription("The amount in minor units (1250 = 12.50)")),
    orderReference: Flag.String("order-reference").pipe(Flag.withDescription("Your order's reference")),
    currency: optionalString("currency", "Three upper-case letters (default: the application's first currency)"),
    description: optionalString("description", "Shown to the customer on the checkout page"),
    method: optionalString("method", "The payment method (default: the application's first)"),
    locale: optionalString("locale", "The checkout page's language, such as en or nl-NL"),
    returnUrl: optionalString("return-url", "Where the checkout page sends the customer back to"),
    metadata: Flag.KeyValuePair("metadata").pipe(
      Flag.withDescription("Metadata as key=value (repeatable)"),
      Flag.optional
    ),
    idempotencyKey
  },
  (input) =>
    call(input, (kassa) =>
      kassa.payments.create(
        {
          amount: input.amount,
          order_reference: input.orderReference,
          ...some("currency", input.currency),
          ...some("description", input.description),
          ...some("method", input.method),
          ...some("locale", input.locale),
          ...some("return_url", input.returnUrl),
          ...some("metadata", input.metadata)
        },
        some("idempotencyKey", input.idempotencyKey)
      )
    ).pipe(
      Effect.flatMap((payment) => output(input.json, payment, renderPayment)),
      reporting(input.json)
    )
).pipe(Command.withDescription("Create a payment"))

const get = Command.make("get", { ...Settings.merchant, paymentId }, (input) =>
  call(input, (kassa) => kassa.payments.get(input.paymentId)).pipe(
    Effect.flatMap((payment) => output(input.json, payment, renderPayment)),
    reporting(input.json)
  )
).pipe(Command.withDescription("Show a payment"))

const list = Command.make(
  "list",
  {
    ...Settings.merchant,
    limit: Flag.Int("limit").pipe(Flag.withDescription("Payments per page, 1 to 100 (default 10)"), Flag.optional),
    startingAfter: optionalString("starting-after", "Continue after this payment id (the last of the previous page)"),
    status: Flag.Literals("status", [
      "pending",
      "paid",
      "failed",
      "cancelled",
      "expired",
      "partially_refunded",
      "refunded"
    ]).pipe(Flag.withDescription("Only payments in this status"), Flag.optional),
    orderReference: optionalString("order-reference", "Only payments of this order reference")
  },
  (input) =>
    call(input, (kassa) =>
      kassa.payments.listPage({
        ...some("limit", input.limit),
        ...some("starting_after", input.startingAfter),
        ...some("status", input.status),
        ...some("order_reference", input.orderReference)
      })
    ).pipe(
      Effect.flatMap((page) => output(input.json, page, ({ data, has_more }) => renderPayments(data, has_more))),
      reporting(input.json)
    )
).pipe(Command.withDescription("List payments, newest first, one page"))

const cancel = Command.make("cancel", { ...Settings.merchant, paymentId }, (input) =>
  call(input, (kassa) => kassa.payments.cancel(input.paymentId)).pipe(
    Effect.flatMap((payment) => output(input.json, payment, renderPayment)),
    reporting(input.json)
  )
).pipe(Command.withDescription("Cancel a pending payment"))

const refund = Command.make(
  "refund",
  {
    ...Settings.merchant,
    paymentId,
    amount: Flag.Int("amount").pipe(
      Flag.withDescription("The amount to refund in minor units (default: everything still refundable)"),
      Flag.optional
    ),
    reason: optionalString("reason", "Why, for your records"),
    idempotencyKey
  },
  (input) =>
    call(input, (kassa) =>
      kassa.payments.refund(
        input.paymentId,
        { ...some("amount", input.amount), ...some("reason", input.reason) },
        some("idempotencyKey", input.idempotencyKey)
      )
    ).pipe(
      Effect.flatMap((payment) => output(input.json, payment, renderPayment)),
      reporting(input.json)
    )
).pipe(Command.withDescription("Refund a paid payment, wholly or partly"))

const simulate = Command.make(
  "simulate",
  {
    ...Settings.merchant,
    paymentId,
    outcome: Flag.Literals("outcome", ["paid", "failed", "expired"]).pipe(
      Flag.withDescription("What happens to the pending test payment")
    )
  },
  (input) =>
    call(input, (kassa) => kassa.test.simulate(input.paymentId, { outcome: input.outcome })).pipe(
      Effect.flatMap((payment) => output(input.json, payment, renderPayment)),
      reporting(input.json)
    )
).pipe(Command.withDescription("Settle a pending test payment as paid, failed or expired (test keys only)"))

export const payments = Command.make("payments").pipe(
  Command.withDescription("Create, show, list, cancel, refund and simulate payments (merchant API, KASSA_API_KEY)"),
  Command.withSubcommands([create, get, list, cancel, refund, simulate])
)
