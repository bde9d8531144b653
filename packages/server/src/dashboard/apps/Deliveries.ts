/**
 * An application's webhook deliveries (`/dashboard/apps/:id/deliveries`): the list with its filters, one delivery
 * with its attempts and its event's body, and a manual resend. Ids of another application's deliveries are 404
 * here. Template: pages/dashboard/ApplicationDeliveries.ts.
 */
import { Ids } from "@kassa/core"
import { Effect, Option, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { SqlClient } from "effect/sql"
import { AuditLog } from "../../audit/AuditLog.ts"
import * as DeliveryPages from "../../pages/dashboard/ApplicationDeliveries.ts"
import { notFoundPage } from "../../pages/dashboard/MessagePages.ts"
import { DeliveryRepository } from "../../webhooks/DeliveryRepository.ts"
import { Dispatcher } from "../../webhooks/Dispatcher.ts"
import * as ApplicationQueries from "../ApplicationQueries.ts"
import { InApplication, pageSize, route, SignedIn } from "../DashboardRoute.ts"
import * as QueryFilters from "../QueryFilters.ts"
import { frame, noticeCode, redirectHere } from "./ApplicationFrame.ts"

const parseDeliveryId = Schema.decodeUnknownOption(Ids.DeliveryId)

const list = Effect.gen(function* () {
  const { application } = yield* InApplication
  const { query } = yield* SignedIn
  const deliveries = yield* DeliveryRepository
  const filters = {
    limit: pageSize.inApplication,
    status: QueryFilters.deliveryStatus(query, "status"),
    event: QueryFilters.eventName(query, "event"),
    mode: QueryFilters.mode(query, "mode")
  }
  const filter = { status: filters.status ?? "", event: filters.event ?? "", mode: filters.mode ?? "" }
  const after = parseDeliveryId(query.get("starting_after"))
  const page = yield* deliveries.list(application.id, { ...filters, startingAfter: Option.getOrUndefined(after) })
  // A cursor naming no delivery of this application starts from the newest.
  const shown = Option.isSome(page) ? page.value : Option.getOrThrow(yield* deliveries.list(application.id, filters))
  return DeliveryPages.deliveriesPage(yield* frame, {
    deliveries: shown.data,
    hasMore: shown.has_more,
    filter,
    notice: yield* noticeCode
  })
})

/** The delivery of the path with its event's body, if it is one of this application's. */
const ownDelivery = Effect.gen(function* () {
  const { application } = yield* InApplication
  const id = parseDeliveryId((yield* HttpRouter.params).deliveryId)
  if (Option.isNone(id)) return Option.none()
  const body = yield* ApplicationQueries.make(yield* SqlClient.SqlClient).eventBody(application.id, id.value)
  if (Option.isNone(body)) return Option.none()
  const view = yield* (yield* DeliveryRepository).view(id.value)
  return Option.map(view, (delivery) => ({ delivery, body: body.value }))
})

const show = Effect.gen(function* () {
  const found = yield* ownDelivery
  if (Option.isNone(found)) return notFoundPage()
  return DeliveryPages.deliveryPage(yield* frame, { ...found.value, notice: yield* noticeCode })
})

const resend = Effect.gen(function* () {
  const { application } = yield* InApplication
  const found = yield* ownDelivery
  if (Option.isNone(found)) return notFoundPage()
  const { delivery } = found.value
  const started = yield* (yield* Dispatcher).resend(delivery.id)
  if (Option.isNone(started)) return notFoundPage()
  yield* (yield* AuditLog).record((yield* SignedIn).actor, {
    action: "delivery.resent",
    applicationId: application.id,
    target: delivery.id,
    details: { event: delivery.event, event_id: delivery.event_id, payment_id: delivery.payment_id }
  })
  return yield* redirectHere(`/deliveries/${delivery.id}`, "resent")
})

const base = "/dashboard/apps/:id/deliveries"

export const routes = [
  route("GET", base, "view", list),
  route("GET", `${base}/:deliveryId`, "view", show),
  route("POST", `${base}/:deliveryId/resend`, "resend_deliveries", resend)
] as const
