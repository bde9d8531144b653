/** `kassa admin deliveries list|resend`: an application's webhook deliveries and their attempts. */
import type { OperatorSchemas } from "@kassa/core"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import { fields, table } from "../../Output.ts"
import * as Settings from "../../Settings.ts"
import { answer, applicationId, type Request, some } from "./OperatorCall.ts"

type Delivery = typeof OperatorSchemas.DeliveryView.Encoded

const deliveryId = Argument.String("delivery-id").pipe(Argument.withDescription("The delivery's id"))

const lastAttempt = (delivery: Delivery) => {
  const last = delivery.attempts[delivery.attempts.length - 1]
  if (last === undefined) return "-"
  return last.response_status === null ? (last.error ?? "-") : `HTTP ${last.response_status}`
}

const renderDeliveries = (deliveries: ReadonlyArray<Delivery>, hasMore: boolean) => {
  if (deliveries.length === 0) return "No deliveries."
  const rows = table(
    [
      ["id", "ID"],
      ["event", "Event"],
      ["payment_id", "Payment"],
      ["status", "Status"],
      ["attempts", "Attempts"],
      ["last", "Last answer"],
      ["created_at", "Created at"]
    ],
    deliveries.map((delivery) => ({ ...delivery, attempts: delivery.attempts.length, last: lastAttempt(delivery) }))
  )
  const last = deliveries[deliveries.length - 1]
  return hasMore && last !== undefined ? `${rows}\n\nMore deliveries follow: --starting-after ${last.id}` : rows
}

const renderDelivery = (delivery: Delivery) =>
  `${fields([
    ["ID", delivery.id],
    ["Event", `${delivery.event} (${delivery.event_id})`],
    ["Payment", delivery.payment_id],
    ["Mode", delivery.mode],
    ["Status", delivery.status],
    ["Next attempt at", delivery.next_attempt_at],
    ["Created at", delivery.created_at]
  ])}\n\n${table(
    [
      ["number", "#"],
      ["kind", "Kind"],
      ["started_at", "Started at"],
      ["url", "URL"],
      ["response_status", "Status"],
      ["error", "Error"],
      ["duration_ms", "ms"]
    ],
    delivery.attempts
  )}`

const deliveriesList = Command.make(
  "list",
  {
    ...Settings.operator,
    applicationId,
    limit: Flag.Int("limit").pipe(Flag.withDescription("Deliveries per page, 1 to 100 (default 10)"), Flag.optional),
    startingAfter: Flag.String("starting-after").pipe(
      Flag.withDescription("Continue after this delivery id (the last of the previous page)"),
      Flag.optional
    ),
    status: Flag.Literals("status", ["pending", "succeeded", "failed"]).pipe(
      Flag.withDescription("Only deliveries in this status"),
      Flag.optional
    ),
    event: Flag.String("event").pipe(
      Flag.withDescription("Only deliveries of this event (payment.paid…)"),
      Flag.optional
    ),
    paymentId: Flag.String("payment-id").pipe(Flag.withDescription("Only deliveries of this payment"), Flag.optional),
    mode: Flag.Literals("mode", ["test", "live"]).pipe(Flag.withDescription("Only test or only live"), Flag.optional)
  },
  (input) => {
    const query = {
      ...some("limit", input.limit),
      ...some("starting_after", input.startingAfter),
      ...some("status", input.status),
      ...some("event", input.event),
      ...some("payment_id", input.paymentId),
      ...some("mode", input.mode)
    } as Request<"operatorDeliveries", "list">["query"]
    return answer<typeof OperatorSchemas.DeliveryList.Encoded>(
      input,
      "operatorDeliveries.list",
      (client) =>
        client.operatorDeliveries.list({ params: { id: input.applicationId }, query, responseMode: "response-only" }),
      ({ data, has_more }) => renderDeliveries(data, has_more)
    )
  }
).pipe(Command.withDescription("List an application's webhook deliveries, newest first, one page"))

const deliveriesResend = Command.make("resend", { ...Settings.operator, deliveryId }, (input) =>
  answer<Delivery>(
    input,
    "operatorDeliveries.resend",
    (client) => client.operatorDeliveries.resend({ params: { id: input.deliveryId }, responseMode: "response-only" }),
    (resent) => `Resending.\n\n${renderDelivery(resent)}`
  )
).pipe(Command.withDescription("Send a delivery again now, whatever its status"))

export const deliveries = Command.make("deliveries").pipe(
  Command.withDescription("Webhook deliveries: list, resend"),
  Command.withSubcommands([deliveriesList, deliveriesResend])
)
