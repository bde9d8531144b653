/**
 * `kassa events list|get`: the events the webhooks carry, read back through the merchant API (decisions §12), e.g.
 * to see what a receiver that was down missed.
 */
import type { KassaEvent } from "@kassa/client"
import { kassaEventNames } from "@kassa/webhook-verify"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { call, renderPayment } from "../Merchant.ts"
import { fields, money, output, reporting, table } from "../Output.ts"
import * as Settings from "../Settings.ts"

/** `{ key: value }` when the option holds a value, `{}` otherwise (for exact optional properties). */
const some = <K extends string, A>(key: K, option: Option.Option<A>): { [P in K]?: A } =>
  Option.isSome(option) ? ({ [key]: option.value } as { [P in K]?: A }) : {}

export const renderEvent = (event: KassaEvent): string =>
  [
    fields([
      ["ID", event.id],
      ["Event", event.event],
      ["Created at", event.created_at]
    ]),
    // The payment as the webhook carried it, which may differ from the payment now (`kassa payments get`).
    "Payment at the time of the event:",
    renderPayment(event.data)
  ].join("\n\n")

export const renderEvents = (events: ReadonlyArray<KassaEvent>, hasMore: boolean): string => {
  if (events.length === 0) return "No events."
  const rows = table(
    [
      ["id", "ID"],
      ["event", "Event"],
      ["payment", "Payment"],
      ["status", "Status"],
      ["amount", "Amount"],
      ["created_at", "Created at"]
    ],
    events.map(({ id, event, data, created_at }) => ({
      id,
      event,
      payment: data.id,
      status: data.status,
      amount: money(data.amount, data.currency),
      created_at
    }))
  )
  const last = events[events.length - 1]
  return hasMore && last !== undefined ? `${rows}\n\nMore events follow: --starting-after ${last.id}` : rows
}

const list = Command.make(
  "list",
  {
    ...Settings.merchant,
    type: Flag.Literals("type", kassaEventNames).pipe(
      Flag.withDescription("Only events with this name"),
      Flag.optional
    ),
    payment: Flag.String("payment").pipe(Flag.withDescription("Only this payment's events (its id)"), Flag.optional),
    limit: Flag.Int("limit").pipe(Flag.withDescription("Events per page, 1 to 100 (default 10)"), Flag.optional),
    startingAfter: Flag.String("starting-after").pipe(
      Flag.withDescription("Continue after this event id (the last of the previous page)"),
      Flag.optional
    )
  },
  (input) =>
    call(input, (kassa) =>
      kassa.events.listPage({
        ...some("type", input.type),
        ...some("payment_id", input.payment),
        ...some("limit", input.limit),
        ...some("starting_after", input.startingAfter)
      })
    ).pipe(
      Effect.flatMap((page) => output(input.json, page, ({ data, has_more }) => renderEvents(data, has_more))),
      reporting(input.json)
    )
).pipe(Command.withDescription("List events, newest first, one page"))

const get = Command.make(
  "get",
  { ...Settings.merchant, eventId: Argument.String("event-id").pipe(Argument.withDescription("The event's id")) },
  (input) =>
    call(input, (kassa) => kassa.events.retrieve(input.eventId)).pipe(
      Effect.flatMap((event) => output(input.json, event, renderEvent)),
      reporting(input.json)
    )
).pipe(Command.withDescription("Show an event exactly as its webhook carried it"))

export const events = Command.make("events").pipe(
  Command.withDescription("List and show the events the webhooks carry (merchant API, KASSA_API_KEY)"),
  Command.withSubcommands([list, get])
)
