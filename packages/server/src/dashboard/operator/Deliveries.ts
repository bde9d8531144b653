/**
 * Every application's webhook deliveries (`/dashboard/operator/deliveries`), filtered and paged. Template:
 * `deliveriesPage` in pages/dashboard/OperatorViews.ts.
 */
import { Delivery, Ids, Mode, WebhookEvent } from "@kassa/core"
import { Effect, Option, Schema } from "effect"
import { parseApplicationId } from "../../applications/ApplicationRepository.ts"
import { respondPage } from "../../pages/dashboard/DashboardLayout.ts"
import { deliveriesPage } from "../../pages/dashboard/OperatorViews.ts"
import { pageSize, route, SignedIn } from "../DashboardRoute.ts"
import { OperatorQueries } from "../OperatorQueries.ts"
import * as QueryFilters from "../QueryFilters.ts"
import { choices, nextCursor, param } from "./OperatorFrame.ts"

const parseDeliveryId = Schema.decodeUnknownOption(Ids.DeliveryId)

const list = Effect.gen(function* () {
  const { viewer, query } = yield* SignedIn
  const application = parseApplicationId(yield* param("application"))
  const status = QueryFilters.deliveryStatus(query, "status")
  const event = QueryFilters.eventName(query, "event")
  const mode = QueryFilters.mode(query, "mode")
  const page = yield* (yield* OperatorQueries).deliveries({
    limit: pageSize.acrossApplications,
    applicationId: Option.getOrUndefined(application),
    status,
    event,
    mode,
    startingAfter: Option.getOrUndefined(parseDeliveryId(yield* param("starting_after")))
  })
  return respondPage(
    deliveriesPage({
      viewer,
      filters: {
        application: Option.getOrElse(application, () => ""),
        status: status ?? "",
        event: event ?? "",
        mode: mode ?? ""
      },
      applications: yield* choices,
      statuses: Delivery.DeliveryStatus.literals,
      events: WebhookEvent.EventName.literals,
      modes: Mode.Mode.literals,
      deliveries: page.rows,
      next: nextCursor(page, (row) => row.id)
    })
  )
})

export const routes = [route("GET", "/dashboard/operator/deliveries", "operator", list)] as const
