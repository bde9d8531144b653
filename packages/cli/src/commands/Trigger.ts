/**
 * `kassa trigger <event>`: makes the server send a webhook event, by creating a test payment (or taking `--payment`)
 * and driving it with the merchant API: simulate paid/failed/expired, cancel, refund part or all. With the operator's
 * token it then waits for the delivery's first attempt and exits 1 when it did not reach the webhook URL.
 */
import type { Kassa, KassaPayment } from "@kassa/client"
import { kassaEventNames } from "@kassa/webhook-verify"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { call, type MerchantSettings, renderPayment } from "../Merchant.ts"
import { type CommandFailure, failure, fields, printJson, reporting } from "../Output.ts"
import * as Settings from "../Settings.ts"
import { type Delivery, delivered, describeAttempt, firstAttempt } from "./TriggerDelivery.ts"

type EventName = (typeof kassaEventNames)[number]

interface Step {
  readonly action: string
  readonly status: string
}

const payable = new Set(["paid", "partially_refunded"])

export const trigger = Command.make(
  "trigger",
  {
    ...Settings.merchant,
    event: Argument.Literals("event", kassaEventNames).pipe(Argument.withDescription("The event to make Kassa send")),
    payment: Flag.String("payment").pipe(
      Flag.withDescription("Drive this payment instead of creating a test payment"),
      Flag.optional
    ),
    amount: Flag.Int("amount").pipe(
      Flag.withDescription("The amount of the payment created, minor units"),
      Flag.withDefault(1000)
    ),
    adminToken: Flag.Redacted("admin-token").pipe(
      Flag.withDescription(
        "The operator's admin token (env KASSA_ADMIN_TOKEN): wait for the delivery, exit 1 when it fails"
      ),
      Flag.withFallbackConfig(Config.Redacted("KASSA_ADMIN_TOKEN")),
      Flag.optional
    ),
    wait: Flag.Int("wait").pipe(
      Flag.withDescription("Milliseconds to wait for the delivery's first attempt (default 15000)"),
      Flag.withDefault(15_000)
    )
  },
  (input) =>
    Effect.gen(function* () {
      const settings: MerchantSettings = input
      const steps: Array<Step> = []
      const step = (action: string, f: (kassa: Kassa) => Promise<KassaPayment>) =>
        call(settings, f).pipe(
          Effect.tap((payment) => Effect.sync(() => steps.push({ action, status: payment.status })))
        )

      let payment = yield* Option.match(input.payment, {
        onSome: (id) => call(settings, (kassa) => kassa.payments.get(id)),
        onNone: () =>
          step(`create a test payment of ${input.amount}`, (kassa) =>
            kassa.payments.create({ amount: input.amount, order_reference: `trigger-${input.event}-${Date.now()}` })
          )
      })
      const id = payment.id
      const simulate = (outcome: "paid" | "failed" | "expired") =>
        step(`simulate ${outcome}`, (kassa) => kassa.test.simulate(id, { outcome }))

      const event: EventName = input.event
      switch (event) {
        case "payment.paid":
          payment = yield* simulate("paid")
          break
        case "payment.failed":
          payment = yield* simulate("failed")
          break
        case "payment.expired":
          payment = yield* simulate("expired")
          break
        case "payment.cancelled":
          payment = yield* step("cancel", (kassa) => kassa.payments.cancel(id))
          break
        case "payment.partially_refunded":
        case "payment.refunded": {
          if (payment.status === "pending") payment = yield* simulate("paid")
          if (!payable.has(payment.status)) {
            return yield* Effect.fail(
              failure(`Payment ${id} is ${payment.status}: only paid payments can be refunded.`, {
                code: "payment_not_refundable",
                payment_status: payment.status
              })
            )
          }
          const refundable = payment.amount - payment.refunded_amount
          if (event === "payment.refunded") {
            payment = yield* step(`refund the remaining ${refundable}`, (kassa) => kassa.payments.refund(id))
          } else {
            const part = Math.floor(refundable / 2)
            if (part < 1) {
              return yield* Effect.fail<CommandFailure>(
                failure(`Payment ${id} has ${refundable} left to refund: too little for a partial refund.`, {
                  code: "refund_amount_exceeds_refundable",
                  refundable_amount: refundable
                })
              )
            }
            payment = yield* step(`refund ${part} of ${refundable}`, (kassa) =>
              kassa.payments.refund(id, { amount: part, reason: "kassa trigger" })
            )
          }
          break
        }
      }
      const delivery = yield* Option.match(input.adminToken, {
        onNone: () => Effect.succeed<Delivery | null | undefined>(undefined),
        onSome: (adminToken) =>
          firstAttempt({ adminToken, baseUrl: input.baseUrl }, id, event, Math.max(0, input.wait)).pipe(
            Effect.map((found) => found ?? null)
          )
      })
      if (delivery === null || (delivery !== undefined && !delivered(delivery))) {
        // The steps worked; the failure says so (with the payment) as it reports the delivery.
        return yield* Effect.fail(
          failure(
            delivery === null
              ? `Kassa made no attempt to deliver ${event} for ${id} within ${input.wait} ms.`
              : `The delivery of ${event} for ${id} failed: ${describeAttempt(delivery)}. Kassa retries it on its schedule.`,
            {
              code: delivery === null ? "delivery_not_attempted" : "delivery_failed",
              payment_id: id,
              payment_status: payment.status,
              ...(delivery === null
                ? {}
                : {
                    delivery_id: delivery.id,
                    response_status: delivery.attempts[0]?.response_status ?? null,
                    attempt_error: delivery.attempts[0]?.error ?? null
                  })
            }
          )
        )
      }
      const result = { event, payment, steps, ...(delivery === undefined ? {} : { delivery }) }
      const sent =
        delivery === undefined
          ? `Kassa sends ${event} for ${id} to the application's webhook URL ` +
            "(with KASSA_ADMIN_TOKEN, trigger waits for the delivery and exits 1 when it fails)."
          : `Delivered ${event} for ${id}: ${describeAttempt(delivery)}.`
      yield* input.json
        ? printJson(result)
        : Console.log(
            `${fields(steps.map(({ action, status }, i) => [`${i + 1}. ${action}`, `-> ${status}`]))}\n\n` +
              `${sent}\n\n${renderPayment(payment)}`
          )
    }).pipe(reporting(input.json))
).pipe(
  Command.withDescription(
    "Make Kassa send a webhook event: creates a test payment (or uses --payment) and drives it there"
  )
)
