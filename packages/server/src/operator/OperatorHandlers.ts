/**
 * The operator API's handlers over the application and key repositories, and {@link layer}: the API's routes with
 * their middleware, ready to merge into the server's router.
 */
import {
  ApiError,
  Application,
  Ids,
  InvalidRequest,
  OperatorApi,
  OperatorSettings,
  RequestValidation,
  WebhookSecret
} from "@kassa/core"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import type { SecureRandom } from "effect/crypto"
import type { HttpServerRequest } from "effect/http"
import { HttpApi, HttpApiBuilder } from "effect/http-api"
import { type ApiKeyRecord, ApiKeyRepository, type IssuedApiKey } from "../applications/ApiKeyRepository.ts"
import {
  ApplicationRepository,
  parseApplicationId,
  type StoredApplication,
  toApplication
} from "../applications/ApplicationRepository.ts"
import { AuditLog, nameApplication } from "../audit/AuditLog.ts"
import { ClientAddress } from "../auth/ClientAddress.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import { LiveRefunds } from "../live/LiveRefunds.ts"
import {
  type EndpointRefused,
  type LinkRefused,
  ProviderLinking,
  type ProviderUnavailable
} from "../providers/ProviderLinking.ts"
import { ProviderLinks, toView } from "../providers/ProviderLinks.ts"
import { type Membership, parseUserId, type User, UserRepository } from "../users/UserRepository.ts"
import { DeliveryRepository } from "../webhooks/DeliveryRepository.ts"
import { Dispatcher } from "../webhooks/Dispatcher.ts"
import * as AdminAuthentication from "./AdminAuthentication.ts"

const applicationNotFound = () => new ApiError.NotFound({ message: "No application with this id." })

/** The application a path names, or 404 `not_found` (also for a path segment that is not an id). */
const findApplication =
  (applications: ApplicationRepository["Service"]) =>
  (id: string): Effect.Effect<StoredApplication, ApiError.NotFound> =>
    Option.match(parseApplicationId(id), {
      onNone: () => Effect.fail(applicationNotFound()),
      onSome: (applicationId) =>
        applications.find(applicationId).pipe(Effect.flatMap(Effect.fromOption(applicationNotFound)))
    })
const keyNotFound = () => new ApiError.NotFound({ message: "No API key with this id." })

const parseKeyId = Schema.decodeUnknownOption(Ids.ApiKeyId)
const parseDeliveryId = Schema.decodeUnknownOption(Ids.DeliveryId)
const deliveryNotFound = () => new ApiError.NotFound({ message: "No delivery with this id." })

const settingsErrors = (
  sent: OperatorSettings.UpdateApplicationBody,
  result: { readonly min_amount: number; readonly max_amount: number },
  production: boolean
) => {
  const fields = OperatorSettings.ruleErrors(sent, result, production)
  return Object.keys(fields).length === 0 ? Effect.void : Effect.fail(RequestValidation.validationFailed(fields))
}

const keyView = (key: ApiKeyRecord) => ({
  id: key.id,
  mode: key.mode,
  display: key.display,
  created_at: key.created_at,
  last_used_at: key.last_used_at,
  revoked_at: key.revoked_at
})

const issuedView = (key: IssuedApiKey) => ({
  id: key.id,
  mode: key.mode,
  key: key.key,
  display: key.display,
  created_at: key.created_at
})

export const ApplicationsHandlers = HttpApiBuilder.group(
  OperatorApi.OperatorApi,
  "operatorApplications",
  Effect.fn(function* (handlers) {
    const applications = yield* ApplicationRepository
    const config = yield* ServerConfig
    const random = yield* Effect.context<SecureRandom.SecureRandom>()
    const production = config.environment === "production"
    const newSecret = WebhookSecret.generate.pipe(Effect.provide(random))

    const find = findApplication(applications)

    return handlers
      .handle(
        "create",
        Effect.fn("Operator.createApplication")(function* ({ payload }) {
          const input = { ...Application.defaults, ...payload }
          yield* settingsErrors(payload, input, production)
          const webhookSecret = yield* newSecret
          const stored = yield* applications.create(input, webhookSecret)
          yield* nameApplication(stored.id)
          return { application: toApplication(stored), webhook_secret: webhookSecret }
        })
      )
      .handle("list", () => applications.list.pipe(Effect.map((stored) => ({ data: stored.map(toApplication) }))))
      .handle("retrieve", ({ params }) => find(params.id).pipe(Effect.map(toApplication)))
      .handle(
        "update",
        Effect.fn("Operator.updateApplication")(function* ({ params, payload }) {
          const current = yield* find(params.id)
          yield* settingsErrors(payload, { ...current, ...payload }, production)
          const updated = yield* applications.update(current.id, payload)
          return toApplication(yield* Effect.fromOption(updated, applicationNotFound))
        })
      )
      .handle(
        "rotateWebhookSecret",
        Effect.fn("Operator.rotateWebhookSecret")(function* ({ params }) {
          const { id } = yield* find(params.id)
          const webhookSecret = yield* newSecret
          // The repository keeps the previous secret signing for 24 h (decisions §7).
          if (!(yield* applications.rotateWebhookSecret(id, webhookSecret))) return yield* applicationNotFound()
          return { webhook_secret: webhookSecret }
        })
      )
  })
)

export const KeysHandlers = HttpApiBuilder.group(
  OperatorApi.OperatorApi,
  "operatorKeys",
  Effect.fn(function* (handlers) {
    const applications = yield* ApplicationRepository
    const keys = yield* ApiKeyRepository

    const applicationId = (id: string): Effect.Effect<Ids.ApplicationId, ApiError.NotFound> =>
      findApplication(applications)(id).pipe(Effect.map((stored) => stored.id))

    const keyId = (id: string): Effect.Effect<Ids.ApiKeyId, ApiError.NotFound> =>
      Effect.fromOption(parseKeyId(id), keyNotFound)

    return handlers
      .handle(
        "create",
        Effect.fn("Operator.issueKey")(function* ({ params, payload }) {
          return issuedView(yield* keys.issue(yield* applicationId(params.id), payload.mode))
        })
      )
      .handle(
        "list",
        Effect.fn("Operator.listKeys")(function* ({ params }) {
          const records = yield* keys.list(yield* applicationId(params.id))
          return { data: records.map(keyView) }
        })
      )
      .handle(
        "roll",
        Effect.fn("Operator.rollKey")(function* ({ params }) {
          // None for a revoked key too: it has no successor to issue any more.
          const rolled = yield* keys.roll(yield* keyId(params.key_id))
          const issued = yield* Effect.fromOption(
            rolled,
            () => new ApiError.NotFound({ message: "No active API key with this id." })
          )
          yield* nameApplication(issued.application_id)
          return issuedView(issued)
        })
      )
      .handle(
        "revoke",
        Effect.fn("Operator.revokeKey")(function* ({ params }) {
          // Revoking a revoked key answers the record unchanged: the request's intent already holds.
          const revoked = yield* Effect.fromOption(yield* keys.revoke(yield* keyId(params.key_id)), keyNotFound)
          yield* nameApplication(revoked.application_id)
          return keyView(revoked)
        })
      )
  })
)

export const DeliveriesHandlers = HttpApiBuilder.group(
  OperatorApi.OperatorApi,
  "operatorDeliveries",
  Effect.fn(function* (handlers) {
    const applications = yield* ApplicationRepository
    const deliveries = yield* DeliveryRepository
    const dispatcher = yield* Dispatcher

    return handlers
      .handle(
        "list",
        Effect.fn("Operator.listDeliveries")(function* ({ params, query }) {
          const application = yield* findApplication(applications)(params.id)
          const page = yield* deliveries.list(application.id, {
            limit: query.limit,
            startingAfter: query.starting_after,
            status: query.status,
            event: query.event,
            paymentId: query.payment_id,
            mode: query.mode
          })
          return yield* Effect.fromOption(page, () =>
            RequestValidation.validationFailed({ starting_after: ["is not the id of a delivery of this application"] })
          )
        })
      )
      .handle(
        "resend",
        Effect.fn("Operator.resendDelivery")(function* ({ params }) {
          const id = yield* Effect.fromOption(parseDeliveryId(params.id), deliveryNotFound)
          const resent = yield* Effect.fromOption(yield* dispatcher.resend(id), deliveryNotFound)
          yield* nameApplication(resent.applicationId)
          return resent.view
        })
      )
  })
)

const userNotFound = () => new ApiError.NotFound({ message: "No user with this id." })

export const UsersHandlers = HttpApiBuilder.group(
  OperatorApi.OperatorApi,
  "operatorUsers",
  Effect.fn(function* (handlers) {
    const users = yield* UserRepository
    const applications = yield* ApplicationRepository
    const audit = yield* AuditLog

    const wire = (user: User, memberships: ReadonlyArray<Membership>) => ({
      id: user.id,
      email: user.email,
      operator_admin: user.operatorAdmin,
      created_at: user.createdAt,
      last_login_at: user.lastLoginAt,
      active: user.deactivatedAt === null,
      deactivated_at: user.deactivatedAt,
      memberships: memberships.map((membership) => ({
        application_id: membership.applicationId,
        role: membership.role
      }))
    })
    const view = (user: User) => users.memberships(user.id).pipe(Effect.map((memberships) => wire(user, memberships)))

    const parsedUserId = (id: string) => Effect.fromOption(parseUserId(id), userNotFound)

    const findPair = (id: string, applicationId: string) =>
      Effect.gen(function* () {
        const user = yield* Effect.flatMap(parsedUserId(id), (userId) =>
          users.find(userId).pipe(Effect.flatMap(Effect.fromOption(userNotFound)))
        )
        const application = yield* findApplication(applications)(applicationId)
        return { user, application }
      })

    return handlers
      .handle(
        "create",
        Effect.fn("Operator.createUser")(function* ({ payload }) {
          const user = yield* users
            .create({
              email: payload.email,
              password: payload.password,
              operatorAdmin: payload.operator_admin ?? false
            })
            .pipe(
              Effect.catchTag("EmailTaken", () =>
                Effect.fail(RequestValidation.validationFailed({ email: ["a user with this e-mail address exists"] }))
              )
            )
          // A new user has no memberships yet.
          return wire(user, [])
        })
      )
      .handle("list", () =>
        users.listWithMemberships.pipe(
          Effect.map((all) => ({ data: all.map(({ user, memberships }) => wire(user, memberships)) }))
        )
      )
      .handle(
        "update",
        Effect.fn("Operator.updateUser")(function* ({ params, payload }) {
          const updated = yield* users.update(yield* parsedUserId(params.id), {
            password: payload.password,
            operatorAdmin: payload.operator_admin,
            active: payload.active
          })
          return yield* view(yield* Effect.fromOption(updated, userNotFound))
        })
      )
      .handle(
        "setMembership",
        Effect.fn("Operator.setMembership")(function* ({ params, payload }) {
          const { user, application } = yield* findPair(params.id, params.application_id)
          yield* users.setRole(user.id, application.id, payload.role)
          return yield* view(user)
        })
      )
      .handle(
        "removeMembership",
        Effect.fn("Operator.removeMembership")(function* ({ params }) {
          const { user, application } = yield* findPair(params.id, params.application_id)
          yield* users.removeMembership(user.id, application.id)
          return yield* view(user)
        })
      )
      .handle(
        "audit",
        Effect.fn("Operator.audit")(function* ({ query }) {
          const page = yield* audit.list({
            limit: query.limit,
            before: query.before,
            applicationId: query.application_id
          })
          return {
            data: page.entries.map((entry) => ({
              id: entry.id,
              at: entry.at,
              actor: entry.actor,
              action: entry.action,
              application_id: entry.applicationId,
              target: entry.target,
              details: entry.details,
              ip: entry.ip
            })),
            has_more: page.hasMore
          }
        })
      )
  })
)

const noLink = () => new ApiError.NotFound({ message: "No payment provider account is linked to this application." })

export const ProviderAccountsHandlers = HttpApiBuilder.group(
  OperatorApi.OperatorApi,
  "operatorProviderAccounts",
  Effect.fn(function* (handlers) {
    const applications = yield* ApplicationRepository
    const links = yield* ProviderLinks
    const linking = yield* ProviderLinking
    const clientAddress = yield* ClientAddress
    const find = findApplication(applications)
    // The admin token as the audit entries' actor, as for the refund below.
    const adminActor = (request: HttpServerRequest.HttpServerRequest) => ({
      label: "admin token",
      userId: null,
      ip: clientAddress.text(request)
    })

    return handlers
      .handle(
        "link",
        // Audited by ProviderLinking (linked, or refused by the provider) with the dashboard's details.
        Effect.fn("Operator.linkProviderAccount")(function* ({ params, payload, request }) {
          const application = yield* find(params.id)
          const { link } = yield* linking
            .link({
              applicationId: application.id,
              provider: payload.provider,
              secretKey: Redacted.make(payload.secret_key),
              actor: adminActor(request)
            })
            .pipe(
              Effect.catchTags({
                LinkRefused: (refused: LinkRefused) =>
                  Effect.fail(RequestValidation.validationFailed({ secret_key: [refused.message] })),
                EndpointRefused: (refused: EndpointRefused) =>
                  Effect.fail(new ApiError.ProviderError({ message: refused.message })),
                ProviderUnavailable: (unavailable: ProviderUnavailable) =>
                  Effect.fail(new ApiError.ProviderError({ message: unavailable.message }))
              })
            )
          return toView(link)
        })
      )
      .handle(
        "show",
        Effect.fn("Operator.showProviderAccount")(function* ({ params }) {
          const application = yield* find(params.id)
          return toView(yield* Effect.fromOption(yield* links.active(application.id), noLink))
        })
      )
      .handle(
        "retire",
        Effect.fn("Operator.retireProviderAccount")(function* ({ params, request }) {
          const application = yield* find(params.id)
          const retired = yield* linking.retire(application.id, adminActor(request))
          return toView(yield* Effect.fromOption(retired, noLink))
        })
      )
  })
)

const OperatorPaymentsHandlers = HttpApiBuilder.group(
  OperatorApi.OperatorApi,
  "operatorPayments",
  Effect.fn(function* (handlers) {
    const refunds = yield* LiveRefunds
    const audit = yield* AuditLog
    const clientAddress = yield* ClientAddress
    const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)
    return handlers.handle(
      "refund",
      Effect.fn("Operator.refundPayment")(function* ({ params, payload, request }) {
        const paymentId = yield* Effect.fromOption(parsePaymentId(params.id)).pipe(
          Effect.mapError(() => new ApiError.NotFound({ message: "No payment with this id." }))
        )
        const reason = payload.reason ?? null
        const result = yield* refunds.request({ paymentId, amount: payload.amount, reason, requestedBy: null })
        yield* nameApplication(result.applicationId)
        const refund = result.payment.refunds.find((entry) => entry.id === result.refundId)
        // The same entry as the dashboard's refund request, with the admin token as the actor.
        yield* audit.record(
          { label: "admin token", userId: null, ip: clientAddress.text(request) },
          {
            action: "refund.requested",
            applicationId: result.applicationId,
            target: paymentId,
            details: {
              refund_id: result.refundId,
              amount: refund?.amount ?? null,
              currency: result.payment.currency,
              reason
            }
          }
        )
        return result.payment
      })
    )
  })
)

/** Every method and path the operator API answers, for the router's 405 `Allow` answers. */
export const knownRoutes = (): ReadonlyArray<{ readonly method: string; readonly path: string }> => {
  const routes: Array<{ method: string; path: string }> = [{ method: "GET", path: OperatorApi.operatorOpenApiPath }]
  HttpApi.reflect(OperatorApi.OperatorApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      routes.push({ method: endpoint.method, path: endpoint.path })
    }
  })
  return routes
}

/** The operator API's routes, with their middleware; needs the repositories, secrets and settings. */
export const layer = HttpApiBuilder.layer(OperatorApi.OperatorApi, {
  openapiPath: OperatorApi.operatorOpenApiPath
}).pipe(
  Layer.provide([
    ApplicationsHandlers,
    KeysHandlers,
    DeliveriesHandlers,
    UsersHandlers,
    ProviderAccountsHandlers,
    OperatorPaymentsHandlers
  ]),
  Layer.provide([AdminAuthentication.layer, InvalidRequest.layer])
)
