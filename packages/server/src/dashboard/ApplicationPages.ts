/**
 * An application's pages under `/dashboard/apps/:id` (issue #6 §3–4), for its members and operator admins: overview,
 * API keys, webhooks, deliveries, payments and members.
 *
 * - Every route goes through the guard: not signed in → sign-in; not a member → 404; a member without the route's
 *   permission → 403 (so a viewer's posts are refused before anything is read).
 * - Every post is a form with the session's CSRF token and same-origin headers (guard.form), then the action through
 *   the services that own the rule (ApiKeyRepository, ApplicationRepository, Payments, Dispatcher), then an audit
 *   entry that never holds a secret, then a 303 redirect with a `?notice=` code — or, when a key or secret must be
 *   shown once, the page that shows it.
 * - Ids of another application's keys, deliveries and payments under this application's path are 404.
 * - Members: owners add users they share another application with (operator admins any user), change roles and
 *   remove members, but never the last owner's ownership (409): the owners' memberships are locked while a change is
 *   decided, so an application always keeps an owner. Only the operator's own application page may take it away.
 */
import { DashboardAccess, Ids, Mode, type Payment, UrlMask, WebhookSecret } from "@kassa/core"
import { DateTime, Duration, Effect, Layer, Option, Result, Schema } from "effect"
import type { SecureRandom } from "effect/crypto"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { type ApiKeyRecord, ApiKeyRepository } from "../applications/ApiKeyRepository.ts"
import { ApplicationRepository } from "../applications/ApplicationRepository.ts"
import { AuditLog } from "../audit/AuditLog.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import { insecureInProduction, WebhookUrl } from "../operator/OperatorSchemas.ts"
import * as DeliveryPages from "../pages/dashboard/ApplicationDeliveries.ts"
import * as KeyPages from "../pages/dashboard/ApplicationKeys.ts"
import * as MemberPages from "../pages/dashboard/ApplicationMembers.ts"
import * as OverviewPages from "../pages/dashboard/ApplicationOverview.ts"
import * as PaymentPages from "../pages/dashboard/ApplicationPayments.ts"
import { type AppFrame, appPath } from "../pages/dashboard/ApplicationShared.ts"
import * as WebhookPages from "../pages/dashboard/ApplicationWebhooks.ts"
import { formatAmount } from "../pages/dashboard/Components.ts"
import { Payments } from "../payments/Payments.ts"
import { LiveRefunds } from "../providers/LiveRefunds.ts"
import { parseUserId, type User, UserRepository } from "../users/UserRepository.ts"
import { DeliveryRepository } from "../webhooks/DeliveryRepository.ts"
import { Dispatcher } from "../webhooks/Dispatcher.ts"
import * as ApplicationQueries from "./ApplicationQueries.ts"
import {
  DashboardGuard,
  forbiddenPage,
  type InApplication,
  messagePage,
  notFoundPage,
  type Posted
} from "./DashboardGuard.ts"
import { colleagueOf, membershipSet, readMemberForm } from "./MemberForm.ts"
import * as PaymentSearch from "./PaymentSearch.ts"
import * as ProviderQueries from "./ProviderQueries.ts"
import * as QueryFilters from "./QueryFilters.ts"

const base = "/dashboard/apps/:id"

export const routes = [
  { method: "GET", path: base },
  { method: "GET", path: `${base}/keys` },
  { method: "POST", path: `${base}/keys` },
  { method: "GET", path: `${base}/keys/:keyId/roll` },
  { method: "POST", path: `${base}/keys/:keyId/roll` },
  { method: "GET", path: `${base}/keys/:keyId/revoke` },
  { method: "POST", path: `${base}/keys/:keyId/revoke` },
  { method: "GET", path: `${base}/webhooks` },
  { method: "POST", path: `${base}/webhooks/url` },
  { method: "GET", path: `${base}/webhooks/secret` },
  { method: "POST", path: `${base}/webhooks/secret` },
  { method: "POST", path: `${base}/webhooks/test` },
  { method: "GET", path: `${base}/deliveries` },
  { method: "GET", path: `${base}/deliveries/:deliveryId` },
  { method: "POST", path: `${base}/deliveries/:deliveryId/resend` },
  { method: "GET", path: `${base}/payments` },
  { method: "GET", path: `${base}/payments/:paymentId` },
  { method: "POST", path: `${base}/payments/:paymentId/refunds` },
  { method: "GET", path: `${base}/members` },
  { method: "POST", path: `${base}/members` },
  { method: "POST", path: `${base}/members/:userId/role` },
  { method: "GET", path: `${base}/members/:userId/remove` },
  { method: "POST", path: `${base}/members/:userId/remove` }
] as const

/** Rows on a page of deliveries or payments. */
const pageSize = 25

const parseKeyId = Schema.decodeUnknownOption(Ids.ApiKeyId)
const parseDeliveryId = Schema.decodeUnknownOption(Ids.DeliveryId)
const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)
const isMode = Schema.is(Mode.Mode)
const isWebhookUrl = Schema.is(WebhookUrl)
const isRole = Schema.is(DashboardAccess.Role)

type Params = Readonly<Record<string, string | undefined>>
type Response = HttpServerResponse.HttpServerResponse

/** A webhook URL for the audit log: masked for everyone (a query or user part may carry a token), as the pages mask it. */
const urlForAudit = UrlMask.mask

/** Why a webhook URL typed into the form is refused, if it is. */
const webhookUrlError = (url: string, production: boolean): string | undefined => {
  if (url.length > 2048) return "The URL may be at most 2,048 characters."
  if (!isWebhookUrl(url)) return "Enter an absolute http:// or https:// URL, such as https://shop.example/webhooks."
  if (insecureInProduction(url, production)) return "Webhook URLs must use https in production."
  return undefined
}

/** What a membership change came to. */
type MembershipChange = "changed" | "unchanged" | "not_member" | "last_owner" | "not_owner"

export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const guard = yield* DashboardGuard
    const audit = yield* AuditLog
    const users = yield* UserRepository
    const keys = yield* ApiKeyRepository
    const applications = yield* ApplicationRepository
    const deliveries = yield* DeliveryRepository
    const dispatcher = yield* Dispatcher
    const payments = yield* Payments
    const liveRefunds = yield* LiveRefunds
    const config = yield* ServerConfig
    const random = yield* Effect.context<SecureRandom.SecureRandom>()
    const sql = yield* SqlClient.SqlClient
    const queries = ApplicationQueries.make(sql)
    const production = config.environment === "production"

    const frame = (context: InApplication): AppFrame => ({
      viewer: context.viewer,
      application: context.application,
      can: context.can,
      seesUrlSecrets: DashboardAccess.seesUrlSecrets(context.access)
    })

    const redirect = (context: InApplication, suffix: string, notice?: string): Response =>
      HttpServerResponse.redirect(
        `${appPath(context, suffix)}${notice === undefined ? "" : `?notice=${encodeURIComponent(notice)}`}`,
        { status: 303, headers: { "cache-control": "no-store" } }
      )

    const notice = (context: InApplication) => context.query.get("notice")

    /** A route inside an application, with the permission it needs. */
    const route = (
      method: "GET" | "POST",
      path: string,
      permission: Parameters<InApplication["can"]>[0],
      handler: (context: InApplication, params: Params) => Effect.Effect<Response>
    ) =>
      HttpRouter.add(method, path as `/${string}`, (request: HttpServerRequest.HttpServerRequest) =>
        Effect.flatMap(HttpRouter.params, (params) =>
          guard.application(request, params.id ?? "", permission, (context) => handler(context, params))
        )
      )

    /** A form post inside an application: the permission, then the CSRF check, then `handler`. */
    const post = (
      path: string,
      permission: Parameters<InApplication["can"]>[0],
      handler: (context: InApplication, posted: Posted, params: Params) => Effect.Effect<Response>
    ) =>
      route("POST", path, permission, (context, params) =>
        guard.form(context, (posted) => handler(context, posted, params))
      )

    // ---- Overview -------------------------------------------------------------------------------------------------

    const overview = route("GET", base, "view", (context) =>
      Effect.gen(function* () {
        const id = context.application.id
        const since = DateTime.subtractDuration(yield* DateTime.now, Duration.days(30))
        const counts = yield* queries.overview(id, since)
        const members = yield* users.members(id)
        const active = (yield* keys.list(id)).filter((key) => key.revoked_at === null)
        return OverviewPages.overviewPage(frame(context), {
          counts,
          members,
          activeKeys: {
            test: active.filter((key) => key.mode === "test").length,
            live: active.filter((key) => key.mode === "live").length
          }
        })
      })
    )

    // ---- API keys -------------------------------------------------------------------------------------------------

    /** One of this application's keys; another application's (or an unknown or malformed id) is none. */
    const ownKey = (context: InApplication, raw: string | undefined) =>
      Option.match(parseKeyId(raw), {
        onNone: () => Effect.succeed(Option.none<ApiKeyRecord>()),
        onSome: (id) =>
          keys.find(id).pipe(Effect.map(Option.filter((key) => key.application_id === context.application.id)))
      })

    const alreadyRevoked = (context: InApplication) =>
      messagePage(
        409,
        "Key already revoked",
        "This key is revoked already. Create a new key instead.",
        appPath(context, "/keys")
      )

    const keysList = route("GET", `${base}/keys`, "view", (context) =>
      Effect.map(keys.list(context.application.id), (list) => KeyPages.keysPage(frame(context), list, notice(context)))
    )

    const createKey = post(`${base}/keys`, "manage_keys", (context, posted) =>
      Effect.gen(function* () {
        const mode = posted.value("mode")
        if (!isMode(mode))
          return messagePage(422, "Choose a mode", "A key is either a test or a live key.", appPath(context, "/keys"))
        const issued = yield* keys.issue(context.application.id, mode)
        yield* audit.record(context.actor, {
          action: "api_key.created",
          applicationId: context.application.id,
          target: issued.id,
          details: { mode, display: issued.display }
        })
        return KeyPages.issuedKeyPage(frame(context), issued, null)
      })
    )

    const confirmKey = (action: "roll" | "revoke") =>
      route("GET", `${base}/keys/:keyId/${action}`, "manage_keys", (context, params) =>
        Effect.map(ownKey(context, params.keyId), (found) => {
          if (Option.isNone(found)) return notFoundPage()
          if (found.value.revoked_at !== null) return alreadyRevoked(context)
          return KeyPages.confirmKeyPage(frame(context), found.value, action)
        })
      )

    const rollKey = post(`${base}/keys/:keyId/roll`, "manage_keys", (context, _posted, params) =>
      Effect.gen(function* () {
        const found = yield* ownKey(context, params.keyId)
        if (Option.isNone(found)) return notFoundPage()
        const old = found.value
        const rolled = yield* keys.roll(old.id)
        if (Option.isNone(rolled)) return alreadyRevoked(context)
        yield* audit.record(context.actor, {
          action: "api_key.rolled",
          applicationId: context.application.id,
          target: old.id,
          details: {
            mode: old.mode,
            revoked: old.display,
            new_key_id: rolled.value.id,
            new_display: rolled.value.display
          }
        })
        return KeyPages.issuedKeyPage(frame(context), rolled.value, old)
      })
    )

    const revokeKey = post(`${base}/keys/:keyId/revoke`, "manage_keys", (context, _posted, params) =>
      Effect.gen(function* () {
        const found = yield* ownKey(context, params.keyId)
        if (Option.isNone(found)) return notFoundPage()
        // Revoking a revoked key changes nothing; the request's intent already holds.
        if (found.value.revoked_at === null) {
          yield* keys.revoke(found.value.id)
          yield* audit.record(context.actor, {
            action: "api_key.revoked",
            applicationId: context.application.id,
            target: found.value.id,
            details: { mode: found.value.mode, display: found.value.display }
          })
        }
        return redirect(context, "/keys", "key_revoked")
      })
    )

    // ---- Webhooks -------------------------------------------------------------------------------------------------

    const webhooksView = (context: InApplication, extra: Partial<WebhookPages.WebhooksView> = {}) =>
      Effect.map(DateTime.now, (now) => ({ now, production, notice: notice(context), ...extra }))

    const webhooks = route("GET", `${base}/webhooks`, "view", (context) =>
      Effect.map(webhooksView(context), (view) => WebhookPages.webhooksPage(frame(context), view))
    )

    const saveUrl = post(`${base}/webhooks/url`, "manage_webhooks", (context, posted) =>
      Effect.gen(function* () {
        const typed = posted.value("url")
        const error = typed.length === 0 ? undefined : webhookUrlError(typed, production)
        if (error !== undefined)
          return WebhookPages.webhooksPage(
            frame(context),
            yield* webhooksView(context, { notice: null, url: typed, urlError: error }),
            422
          )
        const url = typed.length === 0 ? null : typed
        const previous = context.application.webhook_url
        yield* applications.update(context.application.id, { webhook_url: url })
        yield* audit.record(context.actor, {
          action: "webhook.url_updated",
          applicationId: context.application.id,
          target: context.application.id,
          details: { from: urlForAudit(previous), to: urlForAudit(url) }
        })
        return redirect(context, "/webhooks", url === null ? "url_cleared" : "url_saved")
      })
    )

    const confirmSecret = route("GET", `${base}/webhooks/secret`, "manage_webhooks", (context) =>
      Effect.succeed(WebhookPages.confirmSecretPage(frame(context)))
    )

    const regenerateSecret = post(`${base}/webhooks/secret`, "manage_webhooks", (context) =>
      Effect.gen(function* () {
        const secret = yield* WebhookSecret.generate.pipe(Effect.provide(random))
        // The repository keeps the previous secret signing for 24 h (decisions §7).
        yield* applications.rotateWebhookSecret(context.application.id, secret)
        yield* audit.record(context.actor, {
          action: "webhook.secret_regenerated",
          applicationId: context.application.id,
          target: context.application.id
        })
        const until = DateTime.addDuration(yield* DateTime.now, WebhookSecret.rotationGrace)
        return WebhookPages.newSecretResponse(frame(context), secret, until)
      })
    )

    /**
     * A real test payment of this application, paid in the simulator: its `payment.paid` event goes through the
     * outbox and the delivery engine like any other, so it shows whether the receiver works end to end.
     */
    const sendTestEvent = post(`${base}/webhooks/test`, "manage_webhooks", (context) =>
      Effect.gen(function* () {
        const application = context.application
        const refuse = (message: string, status: number) =>
          Effect.map(webhooksView(context, { notice: null, testError: message }), (view) =>
            WebhookPages.webhooksPage(frame(context), view, status)
          )
        if (application.status === "suspended" || application.status === "disabled")
          return yield* refuse(`The application is ${application.status}, so no test payment can be made.`, 409)
        const scope = { applicationId: application.id, mode: "test" as const }
        const amount = Math.min(Math.max(application.min_amount, 100), application.max_amount)
        const created = yield* Effect.result(
          payments.create({
            scope,
            application,
            body: {
              amount,
              ...(application.currencies[0] === undefined ? {} : { currency: application.currencies[0] }),
              ...(application.methods[0] === undefined ? {} : { method: application.methods[0] }),
              order_reference: `dashboard-test-${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`,
              description: "Test event sent from the dashboard"
            }
          })
        )
        if (Result.isFailure(created))
          return yield* refuse(`The test payment could not be created: ${created.failure.message}`, 422)
        const paid = yield* Effect.result(payments.simulate(scope, created.success.id, "paid"))
        if (Result.isFailure(paid))
          return yield* refuse(`The test payment could not be paid: ${paid.failure.message}`, 409)
        yield* audit.record(context.actor, {
          action: "webhook.test_sent",
          applicationId: application.id,
          target: paid.success.id,
          details: { payment_id: paid.success.id, amount: paid.success.amount, currency: paid.success.currency }
        })
        return redirect(context, "/webhooks", "test_sent")
      })
    )

    // ---- Deliveries -----------------------------------------------------------------------------------------------

    const deliveryList = route("GET", `${base}/deliveries`, "view", (context) =>
      Effect.gen(function* () {
        const query = {
          limit: pageSize,
          status: QueryFilters.deliveryStatus(context.query, "status"),
          event: QueryFilters.eventName(context.query, "event"),
          mode: QueryFilters.mode(context.query, "mode")
        }
        const filter = { status: query.status ?? "", event: query.event ?? "", mode: query.mode ?? "" }
        const after = parseDeliveryId(context.query.get("starting_after"))
        const page = yield* deliveries.list(context.application.id, {
          ...query,
          startingAfter: Option.getOrUndefined(after)
        })
        // A cursor naming no delivery of this application starts from the newest.
        const shown = Option.isSome(page)
          ? page.value
          : Option.getOrThrow(yield* deliveries.list(context.application.id, query))
        return DeliveryPages.deliveriesPage(frame(context), {
          deliveries: shown.data,
          hasMore: shown.has_more,
          filter,
          notice: notice(context)
        })
      })
    )

    /** One of this application's deliveries with its event's body; none for another application's. */
    const ownDelivery = (context: InApplication, raw: string | undefined) =>
      Effect.gen(function* () {
        const id = parseDeliveryId(raw)
        if (Option.isNone(id)) return Option.none()
        const body = yield* queries.eventBody(context.application.id, id.value)
        if (Option.isNone(body)) return Option.none()
        const view = yield* deliveries.view(id.value)
        return Option.map(view, (delivery) => ({ delivery, body: body.value }))
      })

    const delivery = route("GET", `${base}/deliveries/:deliveryId`, "view", (context, params) =>
      Effect.map(ownDelivery(context, params.deliveryId), (found) =>
        Option.isNone(found)
          ? notFoundPage()
          : DeliveryPages.deliveryPage(frame(context), { ...found.value, notice: notice(context) })
      )
    )

    const resend = post(`${base}/deliveries/:deliveryId/resend`, "resend_deliveries", (context, _posted, params) =>
      Effect.gen(function* () {
        const found = yield* ownDelivery(context, params.deliveryId)
        if (Option.isNone(found)) return notFoundPage()
        const { delivery } = found.value
        const started = yield* dispatcher.resend(delivery.id)
        if (Option.isNone(started)) return notFoundPage()
        yield* audit.record(context.actor, {
          action: "delivery.resent",
          applicationId: context.application.id,
          target: delivery.id,
          details: { event: delivery.event, event_id: delivery.event_id, payment_id: delivery.payment_id }
        })
        return redirect(context, `/deliveries/${delivery.id}`, "resent")
      })
    )

    // ---- Payments -------------------------------------------------------------------------------------------------

    const paymentList = route("GET", `${base}/payments`, "view", (context) =>
      Effect.gen(function* () {
        const id = context.application.id
        const mode = QueryFilters.mode(context.query, "mode")
        const status = QueryFilters.paymentStatus(context.query, "status")
        const reference = QueryFilters.param(context.query, "order_reference", 255)
        const filter = { mode: mode ?? "", status: status ?? "", order_reference: reference }
        const found = yield* queries.payments(id, {
          mode,
          status,
          orderReference: reference === "" ? undefined : reference,
          startingAfter: Option.getOrUndefined(parsePaymentId(context.query.get("starting_after"))),
          limit: pageSize
        })
        const page = yield* PaymentSearch.expireShown(payments, found, status)
        return PaymentPages.paymentsPage(frame(context), { rows: page.rows, hasMore: page.hasMore, filter })
      })
    )

    /** The application's payment with this id, in whichever mode it is (lazy expiry included), or none. */
    const ownPayment = (context: InApplication, raw: string | undefined) =>
      Effect.gen(function* () {
        const id = parsePaymentId(raw)
        if (Option.isNone(id)) return Option.none()
        const mode = yield* queries.paymentMode(context.application.id, id.value)
        if (Option.isNone(mode)) return Option.none()
        return yield* Effect.option(
          payments.retrieve({ applicationId: context.application.id, mode: mode.value }, id.value)
        )
      })

    /** What the payment page shows beside the payment: its timeline and who requested its refunds. */
    const withDetails = (context: InApplication, payment: Payment.Payment) =>
      Effect.all({
        payment: Effect.succeed(payment),
        timeline: queries.timeline(context.application.id, payment.id),
        requesters: queries.refundRequesters(payment.id),
        provider: payment.mode === "live" ? ProviderQueries.providerPayment(sql, payment.id) : Effect.succeed(null)
      })

    const loadPayment = (context: InApplication, raw: string | undefined) =>
      Effect.flatMap(ownPayment(context, raw), (found) =>
        Option.isNone(found) ? Effect.succeedNone : Effect.asSome(withDetails(context, found.value))
      )

    const payment = route("GET", `${base}/payments/:paymentId`, "view", (context, params) =>
      Effect.map(loadPayment(context, params.paymentId), (found) =>
        Option.isNone(found)
          ? notFoundPage()
          : PaymentPages.paymentPage(frame(context), { ...found.value, notice: notice(context) })
      )
    )

    const requestRefund = post(`${base}/payments/:paymentId/refunds`, "request_refunds", (context, posted, params) =>
      Effect.gen(function* () {
        const found = yield* ownPayment(context, params.paymentId)
        if (Option.isNone(found)) return notFoundPage()
        const before = found.value
        if (before.mode === "test")
          return messagePage(
            409,
            "Refund test payments through the API",
            "Test payments are refunded with a test key through the API; the dashboard requests live refunds.",
            appPath(context, `/payments/${before.id}`)
          )
        const amountText = posted.value("amount")
        const reason = posted.value("reason")
        const form = (errors: PaymentPages.RefundFormState["errors"]) => ({ amount: amountText, reason, errors })
        // The form again with its errors, beside the payment as read before (nothing changed) or, after a refusal
        // of the request, as it is now.
        const show = (errors: PaymentPages.RefundFormState["errors"], status: number, reload = true) =>
          Effect.map(
            reload ? loadPayment(context, params.paymentId) : Effect.asSome(withDetails(context, before)),
            (again) =>
              Option.isNone(again)
                ? notFoundPage()
                : PaymentPages.paymentPage(
                    frame(context),
                    { ...again.value, notice: null, refundForm: form(errors) },
                    status
                  )
          )
        const amount = /^[0-9]{1,16}$/.test(amountText) ? Number(amountText) : Number.NaN
        const errors: { amount?: string; reason?: string } = {}
        if (!Number.isSafeInteger(amount) || amount < 1)
          errors.amount = "Enter a whole number of minor units, 1 or more, without a decimal point."
        if (reason.length > 255) errors.reason = "The reason may be at most 255 characters."
        if (errors.amount !== undefined || errors.reason !== undefined) return yield* show(errors, 422, false)

        // Reserved as `pending`, then asked of the payment provider (decisions §10, "Live refunds").
        const requested = yield* Effect.result(
          liveRefunds.request({
            applicationId: context.application.id,
            paymentId: before.id,
            amount,
            reason: reason.length === 0 ? null : reason,
            requestedBy: context.actor.userId
          })
        )
        if (Result.isFailure(requested)) {
          const failure = requested.failure
          switch (failure._tag) {
            case "NotFound":
              return notFoundPage()
            case "RefundAmountExceedsRefundable":
              return yield* show(
                {
                  amount:
                    failure.refundable_amount < 1
                      ? "Nothing is left to refund: earlier refunds, pending ones included, cover the whole amount."
                      : `That is more than can be refunded: at most ${failure.refundable_amount} (${formatAmount(failure.refundable_amount, before.currency, "en")}).`
                },
                422
              )
            case "PaymentNotRefundable":
              return yield* show(
                {
                  form: `This payment is ${failure.status.replace(/_/g, " ")}; only paid or partially refunded payments can be refunded.`
                },
                409
              )
            case "PaymentBusy":
              return yield* show(
                { form: "The payment is being changed by another request right now. Try again in a few seconds." },
                409
              )
          }
        }
        yield* audit.record(context.actor, {
          action: "refund.requested",
          applicationId: context.application.id,
          target: before.id,
          details: {
            refund_id: requested.success.refundId,
            amount,
            currency: before.currency,
            reason: reason.length === 0 ? null : reason
          }
        })
        return redirect(context, `/payments/${before.id}`, "refund_requested")
      })
    )

    // ---- Members --------------------------------------------------------------------------------------------------

    const membersPage = (context: InApplication, extra: Partial<MemberPages.MembersView> = {}, status = 200) =>
      Effect.map(users.members(context.application.id), (list) =>
        MemberPages.membersPage(frame(context), { members: list, notice: notice(context), ...extra }, status)
      )

    /** A user by the id in the path; none for a malformed or unknown id. */
    const pathUser = (raw: string | undefined) =>
      Option.match(parseUserId(raw), { onNone: () => Effect.succeed(Option.none<User>()), onSome: users.find })

    /** A member of this application by the user id in the path; none for anyone else. */
    const ownMember = (context: InApplication, raw: string | undefined) =>
      Effect.gen(function* () {
        const user = yield* pathUser(raw)
        if (Option.isNone(user)) return Option.none()
        const role = yield* users.roleIn(user.value.id, context.application.id)
        return role === null ? Option.none() : Option.some({ user: user.value, role })
      })

    /**
     * Sets `user`'s role in the application (`null` removes them) with its audit entry, in one transaction — unless it
     * would leave the application without an owner. The owners' memberships are locked first, so two owners demoting
     * or removing each other at the same moment are decided one after the other, and the second is refused. A member
     * acting as owner must still be one under that lock. Only `add` makes a non-member a member.
     */
    const changeMembership = (context: InApplication, user: User, role: DashboardAccess.Role | null, add: boolean) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const id = context.application.id
            const owners = (yield* sql`
              SELECT user_id FROM memberships WHERE application_id = ${id} AND role = 'owner' ORDER BY user_id FOR UPDATE
            `).map((row) => String(row.user_id))
            if (!context.access.operatorAdmin && !owners.includes(context.actor.userId ?? ""))
              return "not_owner" satisfies MembershipChange as MembershipChange
            const previous = yield* users.roleIn(user.id, id)
            if (previous === null && !add) return "not_member"
            if (previous === role) return "unchanged"
            if (previous === "owner" && role !== "owner" && owners.every((owner) => owner === user.id))
              return "last_owner"
            if (role === null) yield* users.removeMembership(user.id, id)
            else yield* users.setRole(user.id, id, role)
            yield* audit.record(
              context.actor,
              role === null
                ? {
                    action: "membership.removed",
                    applicationId: id,
                    target: user.id,
                    details: { email: user.email, role: previous }
                  }
                : membershipSet(id, user, role, previous)
            )
            return "changed"
          })
        )
        .pipe(Effect.orDie)

    /** The answer to a membership change: a redirect with `notice`, or why it was refused. */
    const changeAnswer = (context: InApplication, user: User, change: MembershipChange, done: Response) => {
      switch (change) {
        case "changed":
          return Effect.succeed(done)
        case "unchanged":
          return Effect.succeed(redirect(context, "/members", "role_unchanged"))
        case "not_member":
          return Effect.succeed(notFoundPage())
        case "not_owner":
          return Effect.succeed(forbiddenPage())
        case "last_owner":
          return membersPage(
            context,
            {
              notice: null,
              problem: `${user.id === context.actor.userId ? "You are" : `${user.email} is`} the only owner of this application, so the ownership cannot be removed or given up. Make another member an owner first: an application always keeps at least one owner.`
            },
            409
          )
      }
    }

    const members = route("GET", `${base}/members`, "view", (context) => membersPage(context))

    const addMember = post(`${base}/members`, "manage_members", (context, posted) =>
      Effect.gen(function* () {
        // Owners reach only users they share an application with; operator admins any user (MemberForm).
        const read = yield* readMemberForm(
          users,
          posted,
          context.access.operatorAdmin || context.actor.userId === null
            ? "Ask the operator of this Kassa installation to create the user first."
            : colleagueOf(users, context.actor.userId)
        )
        if (Result.isFailure(read)) return yield* membersPage(context, { notice: null, form: read.failure }, 422)
        const { user, role } = read.success
        const change = yield* changeMembership(context, user, role, true)
        return yield* changeAnswer(context, user, change, redirect(context, "/members", "member_added"))
      })
    )

    const changeRole = post(`${base}/members/:userId/role`, "manage_members", (context, posted, params) =>
      Effect.gen(function* () {
        const user = yield* pathUser(params.userId)
        if (Option.isNone(user)) return notFoundPage()
        const role = posted.value("role")
        if (!isRole(role))
          return yield* membersPage(
            context,
            { notice: null, problem: "The role must be owner, developer or viewer." },
            422
          )
        const change = yield* changeMembership(context, user.value, role, false)
        return yield* changeAnswer(context, user.value, change, redirect(context, "/members", "role_changed"))
      })
    )

    const confirmRemoval = route("GET", `${base}/members/:userId/remove`, "manage_members", (context, params) =>
      Effect.map(ownMember(context, params.userId), (found) =>
        Option.isNone(found) ? notFoundPage() : MemberPages.confirmRemovalPage(frame(context), found.value)
      )
    )

    const removeMember = post(`${base}/members/:userId/remove`, "manage_members", (context, _posted, params) =>
      Effect.gen(function* () {
        const user = yield* pathUser(params.userId)
        if (Option.isNone(user)) return notFoundPage()
        const change = yield* changeMembership(context, user.value, null, false)
        // Who removed themselves has no access left here (unless an operator admin): back to their applications.
        const left = user.value.id === context.actor.userId && !context.access.operatorAdmin
        return yield* changeAnswer(
          context,
          user.value,
          change,
          left
            ? HttpServerResponse.redirect("/dashboard", { status: 303, headers: { "cache-control": "no-store" } })
            : redirect(context, "/members", "member_removed")
        )
      })
    )

    return Layer.mergeAll(
      overview,
      keysList,
      createKey,
      confirmKey("roll"),
      rollKey,
      confirmKey("revoke"),
      revokeKey,
      webhooks,
      saveUrl,
      confirmSecret,
      regenerateSecret,
      sendTestEvent,
      deliveryList,
      delivery,
      resend,
      paymentList,
      payment,
      requestRefund,
      members,
      addMember,
      changeRole,
      confirmRemoval,
      removeMember
    )
  })
)
