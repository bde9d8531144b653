/** The API routes the fake answers: one per Stripe endpoint Kassa calls, each citing the page it follows. */
import type { Account } from "./Accounts.ts"
import type { Disputes } from "./Disputes.ts"
import type { EventRequest } from "./Events.ts"
import { invalidRequest } from "./Failures.ts"
import { fixture } from "./Fixtures.ts"
import { clone, isObject, type JsonObject } from "./Json.ts"
import type { PaymentIntents } from "./PaymentIntents.ts"
import type { Refunds } from "./Refunds.ts"
import { type Sessions, view } from "./Sessions.ts"
import type { WebhookEndpoints } from "./WebhookEndpoints.ts"

export type Route = (
  account: Account,
  params: JsonObject,
  match: ReadonlyArray<string | undefined>,
  request: EventRequest & { readonly id: string }
) => JsonObject

export interface RouteEntry {
  readonly method: string
  readonly path: RegExp
  readonly run: Route
}

/**
 * A list page as Stripe answers one (https://docs.stripe.com/api/pagination): newest first, `limit` 1–100
 * (default 10), `starting_after` the last id of the previous page, `created[gt|gte|lt|lte]` filters
 * (https://docs.stripe.com/api/checkout/sessions/list#list_checkout_sessions-created).
 */
const listPage = (items: ReadonlyArray<JsonObject>, params: JsonObject, url: string): JsonObject => {
  const limit = params.limit === undefined ? 10 : Number(params.limit)
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw invalidRequest("Invalid integer: limit must be between 1 and 100.", { param: "limit" })
  }
  const created = isObject(params.created) ? params.created : {}
  const bound = (name: string) => (created[name] === undefined ? undefined : Number(created[name]))
  const [gt, gte, lt, lte] = [bound("gt"), bound("gte"), bound("lt"), bound("lte")]
  const matching = items
    .filter((item) => {
      const at = Number(item.created)
      return (
        (gt === undefined || at > gt) &&
        (gte === undefined || at >= gte) &&
        (lt === undefined || at < lt) &&
        (lte === undefined || at <= lte)
      )
    })
    .reverse()
  const after = typeof params.starting_after === "string" ? params.starting_after : null
  const start = after === null ? 0 : matching.findIndex((item) => item.id === after) + 1
  const page = matching.slice(start, start + limit)
  return { object: "list", data: page, has_more: start + limit < matching.length, url }
}

export const makeRoutes = (objects: {
  readonly endpoints: WebhookEndpoints
  readonly sessions: Sessions
  readonly paymentIntents: PaymentIntents
  readonly refunds: Refunds
  readonly disputes: Disputes
}): ReadonlyArray<RouteEntry> => {
  const { endpoints, sessions, paymentIntents, refunds, disputes } = objects
  return [
    {
      // https://docs.stripe.com/api/accounts/retrieve: the account of the key.
      method: "GET",
      path: /^\/v1\/account$/,
      run: (account) => ({
        ...fixture("account"),
        id: account.id,
        charges_enabled: true,
        details_submitted: true,
        payouts_enabled: true,
        external_accounts: {
          data: [],
          has_more: false,
          object: "list",
          url: `/v1/accounts/${account.id}/external_accounts`
        }
      })
    },
    {
      // https://docs.stripe.com/api/webhook_endpoints/create: `secret` is only returned at creation.
      method: "POST",
      path: /^\/v1\/webhook_endpoints$/,
      run: (account, params) => endpoints.create(account, params)
    },
    {
      // https://docs.stripe.com/api/webhook_endpoints/delete
      method: "DELETE",
      path: /^\/v1\/webhook_endpoints\/([^/]+)$/,
      run: (account, _params, match) => endpoints.remove(account, match[1] ?? "")
    },
    {
      // https://docs.stripe.com/api/checkout/sessions/create
      method: "POST",
      path: /^\/v1\/checkout\/sessions$/,
      run: (account, params) => sessions.create(account, params)
    },
    {
      // https://docs.stripe.com/api/checkout/sessions/list: the account's sessions, newest first; `status` filters;
      // `expand[]=data.payment_intent` expands each (https://docs.stripe.com/expand#lists).
      method: "GET",
      path: /^\/v1\/checkout\/sessions$/,
      run: (account, params) => {
        const expand = params.expand
        const fields = expand === undefined ? [] : Array.isArray(expand) ? expand.map(String) : [String(expand)]
        const inner = fields.map((field) => field.replace(/^data\./, ""))
        if (fields.some((field) => !field.startsWith("data."))) {
          throw invalidRequest("Expansions of a list start with `data.`.", { param: "expand" })
        }
        const owned = sessions
          .stored()
          .filter((stored) => stored.account === account.id)
          .map((stored) => stored.object)
          .filter((session) => params.status === undefined || session.status === params.status)
        const page = listPage(owned, params, "/v1/checkout/sessions")
        const data = (page.data as ReadonlyArray<JsonObject>).map((session) =>
          sessions.expanded(account.id, view(session), inner.length === 0 ? {} : { expand: inner })
        )
        return { ...page, data }
      }
    },
    {
      // https://docs.stripe.com/api/checkout/sessions/retrieve
      method: "GET",
      path: /^\/v1\/checkout\/sessions\/([^/]+)$/,
      run: (account, params, match) =>
        sessions.expanded(account.id, view(sessions.find(account.id, match[1] ?? "").object), params)
    },
    {
      // https://docs.stripe.com/api/payment_intents/retrieve
      method: "GET",
      path: /^\/v1\/payment_intents\/([^/]+)$/,
      run: (account, _params, match) => clone(paymentIntents.find(account.id, match[1] ?? "", "intent").object)
    },
    {
      // https://docs.stripe.com/api/checkout/sessions/expire: only an `open` session can be expired; otherwise an error.
      method: "POST",
      path: /^\/v1\/checkout\/sessions\/([^/]+)\/expire$/,
      run: (account, params, match, request) => {
        const stored = sessions.find(account.id, match[1] ?? "")
        if (stored.object.status !== "open") {
          throw invalidRequest(
            `This Checkout Session is ${String(stored.object.status)} and can no longer be expired; only sessions with status \`open\` can be expired.`,
            {},
            true
          )
        }
        sessions.expire(stored, request)
        return sessions.expanded(account.id, view(stored.object), params)
      }
    },
    {
      // https://docs.stripe.com/api/refunds/create
      method: "POST",
      path: /^\/v1\/refunds$/,
      run: (account, params, _match, request) => refunds.create(account.id, params, request)
    },
    {
      // https://docs.stripe.com/api/refunds/list: newest first, filtered by `charge` or `payment_intent`.
      method: "GET",
      path: /^\/v1\/refunds$/,
      run: (account, params) => {
        const owned = refunds
          .stored()
          .filter((stored) => stored.account === account.id)
          .map((stored) => clone(stored.object))
          .filter(
            (refund) =>
              (params.charge === undefined || refund.charge === params.charge) &&
              (params.payment_intent === undefined || refund.payment_intent === params.payment_intent)
          )
        return listPage(owned, params, "/v1/refunds")
      }
    },
    {
      // https://docs.stripe.com/api/disputes/list: newest first, filtered by `charge` or `payment_intent`.
      method: "GET",
      path: /^\/v1\/disputes$/,
      run: (account, params) => {
        const owned = disputes
          .stored()
          .filter((stored) => stored.account === account.id)
          .map((stored) => clone(stored.object))
          .filter(
            (dispute) =>
              (params.charge === undefined || dispute.charge === params.charge) &&
              (params.payment_intent === undefined || dispute.payment_intent === params.payment_intent)
          )
        return listPage(owned, params, "/v1/disputes")
      }
    },
    {
      // https://docs.stripe.com/api/refunds/retrieve
      method: "GET",
      path: /^\/v1\/refunds\/([^/]+)$/,
      run: (account, _params, match) => clone(refunds.find(account.id, match[1] ?? "").object)
    }
  ]
}
