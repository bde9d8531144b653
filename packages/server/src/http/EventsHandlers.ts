/**
 * The `events` group of the merchant API (decisions §12): list and fetch the key's events. Each answer is written
 * from the events' stored bodies as they are, never decoded and encoded again, so an event read back is byte for
 * byte the body its webhook carried (`EventLog`); the list wraps them as `{"data":[…],"has_more":…}`.
 */
import { ApiError, Ids, MerchantApi, RequestValidation } from "@kassa/core"
import { Effect, Option, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { EventLog } from "../ledger/EventLog.ts"
import { currentScope } from "./PaymentsHandlers.ts"

const json = (body: string) => HttpServerResponse.text(body, { status: 200, contentType: "application/json" })

const isEventId = Schema.is(Ids.EventId)

// A malformed id is answered like an unknown one: nothing could have that id.
const eventNotFound = () => new ApiError.NotFound({ message: "No event with this id." })

export const EventsHandlers = HttpApiBuilder.group(
  MerchantApi.MerchantApi,
  "events",
  Effect.fn(function* (handlers) {
    const log = yield* EventLog
    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function* () {
          const scope = yield* currentScope
          const page = yield* log.list(scope, query).pipe(
            Effect.catchTag("EventCursorNotFound", () =>
              Effect.fail(
                RequestValidation.validationFailed({
                  starting_after: ["is not the id of an event of this application in this mode"]
                })
              )
            )
          )
          return json(`{"data":[${page.bodies.join(",")}],"has_more":${page.hasMore}}`)
        })
      )
      .handle("retrieve", ({ params }) =>
        Effect.gen(function* () {
          if (!isEventId(params.id)) return yield* eventNotFound()
          const body = yield* log.find(yield* currentScope, params.id)
          if (Option.isNone(body)) return yield* eventNotFound()
          return json(body.value)
        })
      )
  })
)
