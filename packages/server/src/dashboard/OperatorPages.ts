/**
 * The operator's pages under `/dashboard/operator` (issue #6 §2, §4), for operator admins only (anyone else gets
 * 404): applications (search, create with the webhook secret shown once, status changes, settings, keys, members),
 * every application's webhook deliveries and payments, the dashboard users, and the audit log.
 *
 * Handlers are thin: read the request, call the repositories, render, audit. Settings are checked by the operator
 * API's own schemas and rules (OperatorSchemas, `settingsRuleErrors`), so the form and the API accept the same
 * values. Every post passes the guard's CSRF check, is recorded in the audit log (never with a secret), and, unless it
 * shows a secret, redirects (303) to a page with a notice from a fixed list.
 */
import {
  Application,
  ApplicationLifecycle,
  Ids,
  Mode,
  Payment,
  RequestValidation,
  WebhookEvent,
  WebhookSecret
} from "@kassa/core"
import { DateTime, Effect, Layer, Option, Redacted, Result, Schema } from "effect"
import type { SecureRandom } from "effect/crypto"
import { HttpRouter, type HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { SqlClient } from "effect/sql"
import { ApiKeyRepository } from "../applications/ApiKeyRepository.ts"
import {
  ApplicationRepository,
  parseApplicationId,
  type StoredApplication,
  toApplication
} from "../applications/ApplicationRepository.ts"
import { AuditLog } from "../audit/AuditLog.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import {
  CreateApplicationBody,
  CreateUserBody,
  LinkProviderBody,
  settingsRuleErrors,
  UpdateApplicationBody,
  UpdateUserBody
} from "../operator/OperatorSchemas.ts"
import { emptyMemberForm } from "../pages/dashboard/ApplicationMembers.ts"
import { respondPage } from "../pages/dashboard/DashboardLayout.ts"
import {
  type ApplicationDetail,
  applicationCreatedPage,
  applicationPage,
  applicationsPage,
  keyIssuedPage,
  newApplicationPage,
  type SettingsValues,
  type StatusAction,
  settingsValuesOf
} from "../pages/dashboard/OperatorApplicationViews.ts"
import { providerPage, providerPath } from "../pages/dashboard/OperatorProvider.ts"
import { providerAccountSection } from "../pages/dashboard/OperatorProviderAccount.ts"
import {
  auditPage,
  deliveriesPage,
  type FieldMessages,
  paymentsPage,
  type UserItem,
  userPage,
  usersPage
} from "../pages/dashboard/OperatorViews.ts"
import { Payments } from "../payments/Payments.ts"
import { LiveCheckouts } from "../providers/LiveCheckouts.ts"
import { LiveRefunds } from "../providers/LiveRefunds.ts"
import { ProviderConnector } from "../providers/ProviderConnector.ts"
import { ProviderLinking } from "../providers/ProviderLinking.ts"
import { ProviderLinks } from "../providers/ProviderLinks.ts"
import { parseUserId, type User, type UserChanges, UserRepository } from "../users/UserRepository.ts"
import { DeliveryStatus } from "../webhooks/DeliveryRepository.ts"
import { DashboardGuard, notFoundPage, type Posted, type Signed } from "./DashboardGuard.ts"
import { membershipSet, readMemberForm } from "./MemberForm.ts"
import { OperatorQueries } from "./OperatorQueries.ts"
import * as PaymentSearch from "./PaymentSearch.ts"
import * as ProviderQueries from "./ProviderQueries.ts"
import * as QueryFilters from "./QueryFilters.ts"

const base = "/dashboard/operator"
const applicationsPath = `${base}/applications`

export const routes = [
  { method: "GET", path: "/dashboard/operator" },
  { method: "GET", path: "/dashboard/operator/applications" },
  { method: "POST", path: "/dashboard/operator/applications" },
  { method: "GET", path: "/dashboard/operator/applications/new" },
  { method: "GET", path: "/dashboard/operator/applications/:id" },
  { method: "POST", path: "/dashboard/operator/applications/:id/status" },
  { method: "POST", path: "/dashboard/operator/applications/:id/settings" },
  { method: "POST", path: "/dashboard/operator/applications/:id/keys" },
  { method: "POST", path: "/dashboard/operator/applications/:id/members" },
  { method: "POST", path: "/dashboard/operator/applications/:id/members/remove" },
  { method: "POST", path: "/dashboard/operator/applications/:id/provider-account" },
  { method: "POST", path: "/dashboard/operator/applications/:id/provider-account/retire" },
  { method: "GET", path: "/dashboard/operator/deliveries" },
  { method: "GET", path: "/dashboard/operator/payments" },
  { method: "GET", path: "/dashboard/operator/provider" },
  { method: "POST", path: "/dashboard/operator/provider/read" },
  { method: "GET", path: "/dashboard/operator/users" },
  { method: "POST", path: "/dashboard/operator/users" },
  { method: "GET", path: "/dashboard/operator/users/:id" },
  { method: "POST", path: "/dashboard/operator/users/:id/password" },
  { method: "POST", path: "/dashboard/operator/users/:id/access" },
  { method: "GET", path: "/dashboard/operator/audit" }
] as const

/** Page size of the deliveries, payments and audit lists. */
export const pageSize = 50

/** The messages a `?notice=` code may show: fixed text, never the request's. */
const notices: ReadonlyMap<string, string> = new Map([
  ["approved", "The application is approved: its API keys work now."],
  ["reactivated", "The application is active again: its API keys work."],
  ["suspended", "The application is suspended: its API keys are refused."],
  ["disabled", "The application is disabled: its API keys are refused."],
  ["settings_saved", "The settings are saved."],
  ["settings_unchanged", "Nothing to save: the settings were already like this."],
  ["member_saved", "The member is saved."],
  ["member_removed", "The member is removed."],
  ["provider_linked", "The Stripe account is linked: Stripe accepted the key and has a webhook endpoint for it."],
  ["provider_retired", "The Stripe link is retired: new live payments are refused until another account is linked."],
  ["provider_read", "Kassa read it from Stripe now and applied the answer."],
  ["provider_no_answer", "Stripe did not answer (or refused): nothing changed; the background round tries again."],
  ["provider_nothing", "There is nothing to read at Stripe for it (no checkout session or no provider refund)."],
  ["user_created", "The user is created and can sign in now."],
  ["password_set", "The new password is set; every session of the user has ended."],
  ["deactivated", "The user is deactivated: signed out everywhere, and sign-in is refused."],
  ["user_reactivated", "The user is active again and can sign in."],
  ["admin_granted", "The user is an operator admin now."],
  ["admin_revoked", "The user is no longer an operator admin."]
])

/** The account changes the user page offers: what the repository is asked, what is audited, which notice shows. */
const accessChanges = {
  deactivate: { changes: { active: false }, action: "user.deactivated", notice: "deactivated" },
  reactivate: { changes: { active: true }, action: "user.reactivated", notice: "user_reactivated" },
  grant_admin: { changes: { operatorAdmin: true }, action: "user.operator_admin_granted", notice: "admin_granted" },
  revoke_admin: { changes: { operatorAdmin: false }, action: "user.operator_admin_revoked", notice: "admin_revoked" }
} as const satisfies Record<string, { changes: UserChanges; action: string; notice: string }>

const noticeOf = (signed: Signed) => {
  const code = signed.query.get("notice")
  return code === null ? undefined : notices.get(code)
}

/** How the dashboard presents each of the core's status moves (ApplicationLifecycle decides which are open). */
const moveViews: Record<ApplicationLifecycle.Move, Omit<StatusAction, "status"> & { readonly action: string }> = {
  approve: { label: "Approve", kind: "primary", action: "approved" },
  reactivate: { label: "Reactivate", kind: "primary", action: "reactivated" },
  suspend: { label: "Suspend", kind: "danger", action: "suspended" },
  disable: { label: "Disable", kind: "danger", action: "disabled" }
}

const transitionsFrom = (status: Application.ApplicationStatus) =>
  ApplicationLifecycle.available(status).map((move) => ({
    ...moveViews[move],
    move,
    status: ApplicationLifecycle.moves[move].to
  }))

const settingNames = [
  "name",
  "methods",
  "currencies",
  "locale",
  "min_amount",
  "max_amount",
  "return_url_host",
  "webhook_url",
  "ip_allowlist",
  "payment_ttl_seconds",
  "rate_limit_per_minute"
] as const satisfies ReadonlyArray<keyof SettingsValues>

const integerSettings = ["min_amount", "max_amount", "payment_ttl_seconds", "rate_limit_per_minute"] as const

const commaList = (text: string) =>
  text
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part.length > 0)

const lineList = (text: string) =>
  text
    .split(/\r?\n/)
    .map((part) => part.trim())
    .filter((part) => part.length > 0)

/**
 * The settings form as the operator API's body: lists split, empty optional fields null, numbers parsed. A number
 * field that is not a whole number is reported here and left out of the body.
 */
const readSettings = (posted: Posted) => {
  const values = Object.fromEntries(settingNames.map((name) => [name, posted.value(name)])) as unknown as SettingsValues
  const body: Record<string, unknown> = {
    name: values.name,
    methods: commaList(values.methods),
    currencies: commaList(values.currencies),
    locale: values.locale,
    return_url_host: values.return_url_host.length === 0 ? null : values.return_url_host,
    webhook_url: values.webhook_url.length === 0 ? null : values.webhook_url,
    ip_allowlist: lineList(values.ip_allowlist)
  }
  const errors: Record<string, Array<string>> = {}
  for (const name of integerSettings) {
    if (/^-?[0-9]+$/.test(values[name])) body[name] = Number(values[name])
    else errors[name] = [`${name} must be a whole number`]
  }
  return { values, body, errors }
}

/**
 * Field errors of a `validation_failed`, one message per form field: an entry of a list (`ip_allowlist.2`) is
 * reported on the list's field, naming the entry.
 */
const collectErrors = (
  into: Record<string, Array<string>>,
  fields: Readonly<Record<string, ReadonlyArray<string>>>,
  body: Readonly<Record<string, unknown>>
) => {
  for (const [path, messages] of Object.entries(fields)) {
    const [name = path, index] = path.split(".")
    const entry = index === undefined ? undefined : (body[name] as ReadonlyArray<unknown> | undefined)?.[Number(index)]
    const list = into[name] ?? []
    for (const message of messages) list.push(entry === undefined ? message : `${String(entry)}: ${message}`)
    into[name] = list
  }
  return into
}

const joined = (errors: Readonly<Record<string, ReadonlyArray<string>>>): FieldMessages =>
  Object.fromEntries(Object.entries(errors).map(([name, messages]) => [name, [...new Set(messages)].join(" ")]))

/** What a settings form changes, by name (values are left out: a webhook URL may carry a token). */
const changedSettings = (current: StoredApplication, next: Readonly<Record<string, unknown>>) =>
  Object.keys(next).filter(
    (name) => JSON.stringify(next[name]) !== JSON.stringify(current[name as keyof StoredApplication])
  )

const isStatus = Schema.is(Application.ApplicationStatus)
const isMode = Schema.is(Mode.Mode)
const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)
const parseDeliveryId = Schema.decodeUnknownOption(Ids.DeliveryId)
const parseRefundId = Schema.decodeUnknownOption(Ids.RefundId)

const param = (signed: Signed, name: string, max = 200) => QueryFilters.param(signed.query, name, max)

const toDate = (value: DateTime.Utc) => new Date(DateTime.toEpochMillis(value))
const toDateOrNull = (value: DateTime.Utc | null) => (value === null ? null : toDate(value))

const userItem = (user: User, memberships: UserItem["memberships"]): UserItem => ({
  id: user.id,
  email: user.email,
  operatorAdmin: user.operatorAdmin,
  lastLoginAt: toDateOrNull(user.lastLoginAt),
  createdAt: toDate(user.createdAt),
  deactivatedAt: toDateOrNull(user.deactivatedAt),
  memberships
})

type Response = HttpServerResponse.HttpServerResponse

const redirect = (location: string) => HttpServerResponse.redirect(location, { status: 303 })

export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const guard = yield* DashboardGuard
    const applications = yield* ApplicationRepository
    const keys = yield* ApiKeyRepository
    const users = yield* UserRepository
    const audit = yield* AuditLog
    const providerLinks = yield* ProviderLinks
    const linking = yield* ProviderLinking
    const queries = yield* OperatorQueries
    const paymentService = yield* Payments
    const checkouts = yield* LiveCheckouts
    const liveRefunds = yield* LiveRefunds
    const connector = yield* ProviderConnector
    const sql = yield* SqlClient.SqlClient
    const config = yield* ServerConfig
    const random = yield* Effect.context<SecureRandom.SecureRandom>()
    const production = config.environment === "production"
    const newSecret = WebhookSecret.generate.pipe(Effect.provide(random))

    const choices = applications.list.pipe(
      Effect.map((all) => all.map((application) => ({ id: application.id, name: application.name })))
    )

    /** Runs `f` for an operator admin with the application of the path (404 when there is none). */
    const withApplication = <E, R>(
      request: HttpServerRequest.HttpServerRequest,
      f: (signed: Signed, application: StoredApplication) => Effect.Effect<Response, E, R>
    ) =>
      guard.operator(request, (signed) =>
        Effect.gen(function* () {
          const params = yield* HttpRouter.params
          const id = parseApplicationId(params.id ?? "")
          if (Option.isNone(id)) return notFoundPage()
          const found = yield* applications.find(id.value)
          if (Option.isNone(found)) return notFoundPage()
          return yield* f(signed, found.value)
        })
      )

    /** Runs `f` for an operator admin's form post that passed the CSRF check. */
    const posted = <E, R>(
      request: HttpServerRequest.HttpServerRequest,
      f: (signed: Signed, posted: Posted, application: StoredApplication) => Effect.Effect<Response, E, R>
    ) => withApplication(request, (signed, application) => guard.form(signed, (form) => f(signed, form, application)))

    const detail = Effect.fn("OperatorPages.detail")(function* (
      signed: Signed,
      application: StoredApplication,
      extra: Partial<Pick<ApplicationDetail, "settings" | "member" | "problem">> & {
        readonly providerProblem?: string
      } = {},
      status = 200
    ) {
      const { providerProblem, ...rest } = extra
      const link = yield* providerLinks.active(application.id)
      const page: ApplicationDetail = {
        viewer: signed.viewer,
        notice: noticeOf(signed),
        application: toApplication(application),
        actions: transitionsFrom(application.status),
        keys: yield* keys.list(application.id),
        members: yield* users.members(application.id),
        settings: { values: settingsValuesOf(application), errors: {} },
        member: emptyMemberForm,
        provider: providerAccountSection({
          viewer: signed.viewer,
          applicationId: application.id,
          link: Option.getOrNull(link),
          problem: providerProblem
        }),
        ...rest
      }
      return respondPage(applicationPage(page), status)
    })

    // ---- Applications ----------------------------------------------------------------------------------------

    const list = (request: HttpServerRequest.HttpServerRequest) =>
      guard.operator(request, (signed) =>
        Effect.gen(function* () {
          const all = yield* applications.list
          const q = param(signed, "q")
          const status = param(signed, "status")
          const needle = q.toLowerCase()
          const found = all
            .filter((application) => !isStatus(status) || application.status === status)
            .filter(
              (application) =>
                needle.length === 0 ||
                application.name.toLowerCase().includes(needle) ||
                application.id.startsWith(needle)
            )
            .reverse()
          return respondPage(
            applicationsPage({
              viewer: signed.viewer,
              notice: noticeOf(signed),
              q,
              status: isStatus(status) ? status : "",
              statuses: Application.ApplicationStatus.literals,
              total: all.length,
              applications: found.map((application) => ({
                id: application.id,
                name: application.name,
                status: application.status,
                currencies: application.currencies,
                createdAt: toDate(application.created_at)
              }))
            })
          )
        })
      )

    const newForm = (request: HttpServerRequest.HttpServerRequest) =>
      guard.operator(request, (signed) =>
        Effect.succeed(
          respondPage(
            newApplicationPage({
              viewer: signed.viewer,
              values: settingsValuesOf({ ...Application.defaults, name: "" }),
              errors: {}
            })
          )
        )
      )

    const create = (request: HttpServerRequest.HttpServerRequest) =>
      guard.operator(request, (signed) =>
        guard.form(signed, (form) =>
          Effect.gen(function* () {
            const { values, body, errors } = readSettings(form)
            const decoded = RequestValidation.validate(CreateApplicationBody)(body)
            if (Result.isFailure(decoded)) collectErrors(errors, decoded.failure.fields, body)
            else if (Object.keys(errors).length === 0)
              collectErrors(
                errors,
                settingsRuleErrors(decoded.success, { ...Application.defaults, ...decoded.success }, production),
                body
              )
            if (Result.isFailure(decoded) || Object.keys(errors).length > 0)
              return respondPage(newApplicationPage({ viewer: signed.viewer, values, errors: joined(errors) }), 422)
            const input = { ...Application.defaults, ...decoded.success }
            const webhookSecret = yield* newSecret
            const created = yield* applications.create(input, webhookSecret)
            yield* audit.record(signed.actor, {
              action: "application.created",
              applicationId: created.id,
              target: created.id,
              details: { name: created.name, status: created.status }
            })
            return respondPage(
              applicationCreatedPage({ viewer: signed.viewer, application: toApplication(created), webhookSecret }),
              201
            )
          })
        )
      )

    const show = (request: HttpServerRequest.HttpServerRequest) =>
      withApplication(request, (signed, application) => detail(signed, application))

    const changeStatus = (request: HttpServerRequest.HttpServerRequest) =>
      posted(request, (signed, form, application) =>
        Effect.gen(function* () {
          const wanted = form.value("status")
          const transition = transitionsFrom(application.status).find((candidate) => candidate.status === wanted)
          if (transition === undefined)
            return yield* detail(
              signed,
              application,
              {
                problem: isStatus(wanted)
                  ? `The application is ${application.status.replace(/_/g, " ")}; it cannot become ${wanted.replace(/_/g, " ")} from there.`
                  : "That is not an application status."
              },
              409
            )
          if (!(yield* applications.changeStatus(application.id, application.status, transition.status))) {
            const current = yield* applications.find(application.id)
            return yield* detail(
              signed,
              Option.getOrElse(current, () => application),
              { problem: "Someone else changed this application's status just now. Check it and try again." },
              409
            )
          }
          yield* audit.record(signed.actor, {
            action: `application.${transition.action}`,
            applicationId: application.id,
            target: application.id,
            details: { from: application.status, to: transition.status }
          })
          return redirect(`${applicationsPath}/${application.id}?notice=${transition.action}`)
        })
      )

    const saveSettings = (request: HttpServerRequest.HttpServerRequest) =>
      posted(request, (signed, form, application) =>
        Effect.gen(function* () {
          const { values, body, errors } = readSettings(form)
          const decoded = RequestValidation.validate(UpdateApplicationBody)(body)
          if (Result.isFailure(decoded)) collectErrors(errors, decoded.failure.fields, body)
          else if (Object.keys(errors).length === 0)
            collectErrors(
              errors,
              settingsRuleErrors(decoded.success, { ...application, ...decoded.success }, production),
              body
            )
          if (Result.isFailure(decoded) || Object.keys(errors).length > 0)
            return yield* detail(signed, application, { settings: { values, errors: joined(errors) } }, 422)
          const changed = changedSettings(application, decoded.success)
          if (changed.length === 0) return redirect(`${applicationsPath}/${application.id}?notice=settings_unchanged`)
          yield* applications.update(application.id, decoded.success)
          yield* audit.record(signed.actor, {
            action: "application.settings_updated",
            applicationId: application.id,
            target: application.id,
            details: { changed }
          })
          return redirect(`${applicationsPath}/${application.id}?notice=settings_saved`)
        })
      )

    const issueKey = (request: HttpServerRequest.HttpServerRequest) =>
      posted(request, (signed, form, application) =>
        Effect.gen(function* () {
          const mode = form.value("mode")
          if (!isMode(mode))
            return yield* detail(signed, application, { problem: "A key is either a test or a live key." }, 422)
          const issued = yield* keys.issue(application.id, mode)
          yield* audit.record(signed.actor, {
            action: "api_key.issued",
            applicationId: application.id,
            target: issued.id,
            details: { mode, display: issued.display }
          })
          return respondPage(
            keyIssuedPage({ viewer: signed.viewer, application: toApplication(application), mode, key: issued.key }),
            201
          )
        })
      )

    const addMember = (request: HttpServerRequest.HttpServerRequest) =>
      posted(request, (signed, form, application) =>
        Effect.gen(function* () {
          const read = yield* readMemberForm(users, form, "Create the user first.")
          if (Result.isFailure(read)) return yield* detail(signed, application, { member: read.failure }, 422)
          const { user, role } = read.success
          const previous = yield* users.roleIn(user.id, application.id)
          yield* users.setRole(user.id, application.id, role)
          yield* audit.record(signed.actor, membershipSet(application.id, user, role, previous))
          return redirect(`${applicationsPath}/${application.id}?notice=member_saved`)
        })
      )

    const removeMember = (request: HttpServerRequest.HttpServerRequest) =>
      posted(request, (signed, form, application) =>
        Effect.gen(function* () {
          const userId = parseUserId(form.value("user_id"))
          const user = Option.isNone(userId) ? Option.none() : yield* users.find(userId.value)
          if (Option.isNone(user)) return notFoundPage()
          if (yield* users.removeMembership(user.value.id, application.id))
            yield* audit.record(signed.actor, {
              action: "membership.removed",
              applicationId: application.id,
              target: user.value.id,
              details: { email: user.value.email }
            })
          return redirect(`${applicationsPath}/${application.id}?notice=member_removed`)
        })
      )

    // ---- Payment provider (issue 12 §2) ------------------------------------------------------------------------

    const linkProvider = (request: HttpServerRequest.HttpServerRequest) =>
      posted(request, (signed, form, application) =>
        Effect.gen(function* () {
          // The operator API's own body schema: the form accepts exactly the keys the API does.
          const decoded = RequestValidation.validate(LinkProviderBody)({
            provider: "stripe",
            secret_key: form.value("secret_key").trim()
          })
          if (Result.isFailure(decoded)) {
            const messages = decoded.failure.fields.secret_key ?? ["secret_key is not valid"]
            return yield* detail(signed, application, { providerProblem: messages.join(" ") }, 422)
          }
          const linked = yield* linking.link(application.id, Redacted.make(decoded.success.secret_key)).pipe(
            Effect.map(Result.succeed),
            Effect.catchTags({
              LinkRefused: (refused) => Effect.succeed(Result.fail({ status: 422, message: refused.message })),
              EndpointRefused: (refused) => Effect.succeed(Result.fail({ status: 502, message: refused.message })),
              ProviderUnavailable: (unavailable) =>
                Effect.succeed(Result.fail({ status: 502, message: unavailable.message }))
            })
          )
          if (Result.isFailure(linked))
            return yield* detail(
              signed,
              application,
              { providerProblem: linked.failure.message },
              linked.failure.status
            )
          const { link, retired } = linked.success
          yield* audit.record(signed.actor, {
            action: "provider_account.linked",
            applicationId: application.id,
            target: link.id,
            details: {
              provider: link.provider,
              account_id: link.accountId,
              livemode: link.livemode,
              key_display: link.keyDisplay,
              webhook_endpoint_id: link.webhookEndpointId,
              retired_link: Option.match(retired, { onNone: () => null, onSome: (previous) => previous.id })
            }
          })
          return redirect(`${applicationsPath}/${application.id}?notice=provider_linked`)
        })
      )

    const retireProvider = (request: HttpServerRequest.HttpServerRequest) =>
      posted(request, (signed, _form, application) =>
        Effect.gen(function* () {
          const retired = yield* linking.retire(application.id)
          if (Option.isNone(retired))
            return yield* detail(signed, application, { providerProblem: "No Stripe account is linked." }, 409)
          yield* audit.record(signed.actor, {
            action: "provider_account.retired",
            applicationId: application.id,
            target: retired.value.id,
            details: {
              provider: retired.value.provider,
              account_id: retired.value.accountId,
              key_display: retired.value.keyDisplay,
              endpoint_deleted: retired.value.endpointRetiredAt !== null
            }
          })
          return redirect(`${applicationsPath}/${application.id}?notice=provider_retired`)
        })
      )

    // ---- Across applications -----------------------------------------------------------------------------------

    const deliveries = (request: HttpServerRequest.HttpServerRequest) =>
      guard.operator(request, (signed) =>
        Effect.gen(function* () {
          const application = parseApplicationId(param(signed, "application"))
          const status = QueryFilters.deliveryStatus(signed.query, "status")
          const event = QueryFilters.eventName(signed.query, "event")
          const mode = QueryFilters.mode(signed.query, "mode")
          const page = yield* queries.deliveries({
            limit: pageSize,
            applicationId: Option.getOrUndefined(application),
            status,
            event,
            mode,
            startingAfter: Option.getOrUndefined(parseDeliveryId(param(signed, "starting_after")))
          })
          const last = page.rows.at(-1)
          return respondPage(
            deliveriesPage({
              viewer: signed.viewer,
              filters: {
                application: Option.getOrElse(application, () => ""),
                status: status ?? "",
                event: event ?? "",
                mode: mode ?? ""
              },
              applications: yield* choices,
              statuses: DeliveryStatus.literals,
              events: WebhookEvent.EventName.literals,
              modes: Mode.Mode.literals,
              deliveries: page.rows,
              next: page.hasMore && last !== undefined ? last.id : null
            })
          )
        })
      )

    const payments = (request: HttpServerRequest.HttpServerRequest) =>
      guard.operator(request, (signed) =>
        Effect.gen(function* () {
          const paymentIdText = param(signed, "payment_id").toLowerCase()
          const paymentId = parsePaymentId(paymentIdText)
          const reference = param(signed, "order_reference", 255)
          const match = param(signed, "match") === "prefix" ? "prefix" : "exact"
          const application = parseApplicationId(param(signed, "application"))
          const status = QueryFilters.paymentStatus(signed.query, "status")
          const mode = QueryFilters.mode(signed.query, "mode")
          const badId = paymentIdText.length > 0 && Option.isNone(paymentId)
          const page = badId
            ? { rows: [], hasMore: false }
            : yield* PaymentSearch.expireShown(
                paymentService,
                yield* queries.payments({
                  limit: pageSize,
                  paymentId: Option.getOrUndefined(paymentId),
                  orderReference: reference.length === 0 ? undefined : reference,
                  prefix: match === "prefix",
                  applicationId: Option.getOrUndefined(application),
                  status,
                  mode,
                  startingAfter: Option.getOrUndefined(parsePaymentId(param(signed, "starting_after")))
                }),
                status
              )
          const last = page.rows.at(-1)
          return respondPage(
            paymentsPage({
              viewer: signed.viewer,
              filters: {
                payment_id: paymentIdText,
                order_reference: reference,
                match,
                application: Option.getOrElse(application, () => ""),
                status: status ?? "",
                mode: mode ?? ""
              },
              errors: badId ? { payment_id: "A payment id is a UUID, like 7d4f0c7e-1b2a-4c3d-9e8f-0a1b2c3d4e5f." } : {},
              applications: yield* choices,
              statuses: Payment.PaymentStatus.literals,
              modes: Mode.Mode.literals,
              payments: page.rows,
              next: page.hasMore && last !== undefined ? last.id : null
            })
          )
        })
      )

    // ---- At Stripe (issue 12 §5) ---------------------------------------------------------------------------------

    const provider = (request: HttpServerRequest.HttpServerRequest) =>
      guard.operator(request, (signed) =>
        Effect.gen(function* () {
          const beforeText = param(signed, "before", 20)
          const before = /^[0-9]{1,15}$/.test(beforeText) ? Number(beforeText) : undefined
          const overdueText = param(signed, "overdue_before", 40)
          const overdueMillis = /^[0-9]{1,15}$/.test(overdueText) ? Number(overdueText) : Number.NaN
          const discrepancies = yield* ProviderQueries.openDiscrepancies(sql, { limit: pageSize, before })
          const overdue = yield* ProviderQueries.overdueReads(sql, {
            now: yield* DateTime.now,
            limit: pageSize,
            before: Number.isFinite(overdueMillis) ? new Date(overdueMillis) : undefined
          })
          const lastDiscrepancy = discrepancies.rows.at(-1)
          const lastOverdue = overdue.rows.at(-1)
          return respondPage(
            providerPage({
              viewer: signed.viewer,
              notice: noticeOf(signed),
              discrepancies: discrepancies.rows,
              discrepanciesNext: discrepancies.hasMore && lastDiscrepancy !== undefined ? lastDiscrepancy.id : null,
              overdue: overdue.rows,
              overdueNext:
                overdue.hasMore && lastOverdue !== undefined ? String(lastOverdue.waitingSince.getTime()) : null
            })
          )
        })
      )

    /**
     * Reads one live payment's checkout (or one live refund) from Stripe now and applies the answer as the background
     * round would (`Payments.applyCheckoutAnswer`, `LiveRefunds.refresh`): a status change commits with its event.
     */
    const readNow = Effect.fn("OperatorPages.readNow")(function* (paymentId: Ids.PaymentId) {
      const checkout = yield* checkouts.find(paymentId)
      if (Option.isNone(checkout) || checkout.value.sessionId === null) return "provider_nothing" as const
      const link = yield* providerLinks.find(checkout.value.linkId)
      if (Option.isNone(link)) return "provider_nothing" as const
      const reading = yield* connector
        .read(providerLinks.access(link.value), checkout.value.sessionId)
        .pipe(Effect.result)
      if (reading._tag === "Failure" || reading.success._tag === "NoAnswer") return "provider_no_answer" as const
      yield* paymentService.applyCheckoutAnswer({ paymentId, reading: reading.success })
      return "provider_read" as const
    })

    const readFromProvider = (request: HttpServerRequest.HttpServerRequest) =>
      guard.operator(request, (signed) =>
        guard.form(signed, (form) =>
          Effect.gen(function* () {
            const refundId = parseRefundId(form.value("refund_id"))
            const paymentId = parsePaymentId(form.value("payment_id"))
            if (Option.isNone(refundId) && Option.isNone(paymentId)) return notFoundPage()
            const found = yield* ProviderQueries.readTarget(
              sql,
              Option.isSome(refundId) ? { refundId: refundId.value } : { paymentId: Option.getOrThrow(paymentId) }
            )
            if (Option.isNone(found)) return notFoundPage()
            const target = found.value
            const outcome = Option.isSome(refundId)
              ? Option.isSome(yield* liveRefunds.refresh(refundId.value))
                ? "provider_read"
                : "provider_nothing"
              : yield* readNow(target.paymentId as Ids.PaymentId)
            yield* audit.record(signed.actor, {
              action: "provider.read_now",
              applicationId: target.applicationId as Ids.ApplicationId,
              target: Option.isSome(refundId) ? refundId.value : target.paymentId,
              details: { payment_id: target.paymentId, outcome }
            })
            return redirect(`${providerPath}?notice=${outcome}`)
          })
        )
      )

    // ---- Users -------------------------------------------------------------------------------------------------

    const showUsers = Effect.fn("OperatorPages.users")(function* (
      signed: Signed,
      form: { readonly email: string; readonly operatorAdmin: boolean; readonly errors: FieldMessages },
      status = 200
    ) {
      const all = yield* users.listWithMemberships
      return respondPage(
        usersPage({
          viewer: signed.viewer,
          notice: noticeOf(signed),
          form,
          users: all.map(({ user, memberships }) => userItem(user, memberships))
        }),
        status
      )
    })

    /** Runs `f` for an operator admin with the user of the path (404 when there is none). */
    const withUser = <E, R>(
      request: HttpServerRequest.HttpServerRequest,
      f: (signed: Signed, user: User) => Effect.Effect<Response, E, R>
    ) =>
      guard.operator(request, (signed) =>
        Effect.gen(function* () {
          const params = yield* HttpRouter.params
          const id = parseUserId(params.id ?? "")
          if (Option.isNone(id)) return notFoundPage()
          const found = yield* users.find(id.value)
          if (Option.isNone(found)) return notFoundPage()
          return yield* f(signed, found.value)
        })
      )

    const showUser = Effect.fn("OperatorPages.user")(function* (
      signed: Signed,
      user: User,
      refused: { readonly problem?: string; readonly passwordError?: string } = {},
      status = 200
    ) {
      const memberships = yield* users.memberships(user.id)
      return respondPage(
        userPage({
          viewer: signed.viewer,
          notice: noticeOf(signed),
          user: userItem(user, memberships),
          self: user.id === signed.session.user.id,
          ...refused
        }),
        status
      )
    })

    /** Their own account is changed on the account page, which asks for the current password. */
    const ownAccount = "This is your own account: change it on your account page."

    const setUserPassword = (request: HttpServerRequest.HttpServerRequest) =>
      withUser(request, (signed, user) =>
        guard.form(signed, (form) =>
          Effect.gen(function* () {
            if (user.id === signed.session.user.id) return yield* showUser(signed, user, { problem: ownAccount }, 422)
            // The password as typed: spaces count (the policy is length only).
            const password = Option.getOrElse(UrlParams.getFirst(form.form, "password"), () => "")
            const decoded = RequestValidation.validate(UpdateUserBody)({ password })
            if (Result.isFailure(decoded) || decoded.success.password === undefined) {
              const errors = Result.isFailure(decoded) ? joined(collectErrors({}, decoded.failure.fields, {})) : {}
              return yield* showUser(signed, user, { passwordError: errors.password ?? "Enter a password." }, 422)
            }
            yield* users.update(user.id, { password: decoded.success.password })
            yield* audit.record(signed.actor, {
              action: "user.password_set",
              target: user.id,
              details: { email: user.email }
            })
            return redirect(`${base}/users/${user.id}?notice=password_set`)
          })
        )
      )

    const changeUserAccess = (request: HttpServerRequest.HttpServerRequest) =>
      withUser(request, (signed, user) =>
        guard.form(signed, (form) =>
          Effect.gen(function* () {
            const wanted = form.value("change")
            if (!Object.hasOwn(accessChanges, wanted))
              return yield* showUser(signed, user, { problem: "Choose one of the buttons." }, 422)
            const change = accessChanges[wanted as keyof typeof accessChanges]
            // An operator admin cannot lock themselves out (and so leave an installation without one).
            if (user.id === signed.session.user.id) return yield* showUser(signed, user, { problem: ownAccount }, 422)
            yield* users.update(user.id, change.changes)
            yield* audit.record(signed.actor, {
              action: change.action,
              target: user.id,
              details: { email: user.email }
            })
            return redirect(`${base}/users/${user.id}?notice=${change.notice}`)
          })
        )
      )

    const usersList = (request: HttpServerRequest.HttpServerRequest) =>
      guard.operator(request, (signed) => showUsers(signed, { email: "", operatorAdmin: false, errors: {} }))

    const createUser = (request: HttpServerRequest.HttpServerRequest) =>
      guard.operator(request, (signed) =>
        guard.form(signed, (form) =>
          Effect.gen(function* () {
            const email = form.value("email").slice(0, 300)
            const operatorAdmin = form.value("operator_admin").length > 0
            // The password as typed: spaces count (the policy is length only).
            const password = Option.getOrElse(UrlParams.getFirst(form.form, "password"), () => "")
            const decoded = RequestValidation.validate(CreateUserBody)({
              email,
              password,
              operator_admin: operatorAdmin
            })
            if (Result.isFailure(decoded))
              return yield* showUsers(
                signed,
                { email, operatorAdmin, errors: joined(collectErrors({}, decoded.failure.fields, {})) },
                422
              )
            const created = yield* users
              .create({ email: decoded.success.email, password: decoded.success.password, operatorAdmin })
              .pipe(Effect.option)
            if (Option.isNone(created))
              return yield* showUsers(
                signed,
                { email, operatorAdmin, errors: { email: "A user with this e-mail address exists." } },
                422
              )
            yield* audit.record(signed.actor, {
              action: "user.created",
              target: created.value.id,
              details: { email: created.value.email, operator_admin: created.value.operatorAdmin }
            })
            return redirect(`${base}/users?notice=user_created`)
          })
        )
      )

    // ---- Audit log ---------------------------------------------------------------------------------------------

    const auditLog = (request: HttpServerRequest.HttpServerRequest) =>
      guard.operator(request, (signed) =>
        Effect.gen(function* () {
          const application = parseApplicationId(param(signed, "application"))
          const actor = param(signed, "actor", 254)
          const action = param(signed, "action", 100)
          const beforeText = param(signed, "before", 20)
          const before = /^[0-9]{1,15}$/.test(beforeText) ? Number(beforeText) : undefined
          const page = yield* audit.list({
            limit: pageSize,
            applicationId: Option.getOrUndefined(application),
            actor: actor.length === 0 ? undefined : actor,
            action: action.length === 0 ? undefined : action,
            before
          })
          const last = page.entries.at(-1)
          return respondPage(
            auditPage({
              viewer: signed.viewer,
              filters: { application: Option.getOrElse(application, () => ""), actor, action },
              applications: yield* choices,
              actions: yield* audit.actions,
              entries: page.entries.map((entry) => ({
                id: entry.id,
                at: toDate(entry.at),
                actor: entry.actor,
                action: entry.action,
                applicationId: entry.applicationId,
                applicationName: entry.applicationName,
                target: entry.target,
                details: entry.details,
                ip: entry.ip
              })),
              before: page.hasMore && last !== undefined ? last.id : null
            })
          )
        })
      )

    return HttpRouter.addAll([
      HttpRouter.route("GET", "/dashboard/operator", (request) =>
        guard.operator(request, () => Effect.succeed(redirect(applicationsPath)))
      ),
      HttpRouter.route("GET", "/dashboard/operator/applications", list),
      HttpRouter.route("POST", "/dashboard/operator/applications", create),
      HttpRouter.route("GET", "/dashboard/operator/applications/new", newForm),
      HttpRouter.route("GET", "/dashboard/operator/applications/:id", show),
      HttpRouter.route("POST", "/dashboard/operator/applications/:id/status", changeStatus),
      HttpRouter.route("POST", "/dashboard/operator/applications/:id/settings", saveSettings),
      HttpRouter.route("POST", "/dashboard/operator/applications/:id/keys", issueKey),
      HttpRouter.route("POST", "/dashboard/operator/applications/:id/members", addMember),
      HttpRouter.route("POST", "/dashboard/operator/applications/:id/members/remove", removeMember),
      HttpRouter.route("POST", "/dashboard/operator/applications/:id/provider-account", linkProvider),
      HttpRouter.route("POST", "/dashboard/operator/applications/:id/provider-account/retire", retireProvider),
      HttpRouter.route("GET", "/dashboard/operator/deliveries", deliveries),
      HttpRouter.route("GET", "/dashboard/operator/payments", payments),
      HttpRouter.route("GET", "/dashboard/operator/provider", provider),
      HttpRouter.route("POST", "/dashboard/operator/provider/read", readFromProvider),
      HttpRouter.route("GET", "/dashboard/operator/users", usersList),
      HttpRouter.route("POST", "/dashboard/operator/users", createUser),
      HttpRouter.route("GET", "/dashboard/operator/users/:id", (request) =>
        withUser(request, (signed, user) => showUser(signed, user))
      ),
      HttpRouter.route("POST", "/dashboard/operator/users/:id/password", setUserPassword),
      HttpRouter.route("POST", "/dashboard/operator/users/:id/access", changeUserAccess),
      HttpRouter.route("GET", "/dashboard/operator/audit", auditLog)
    ])
  })
).pipe(Layer.provide(OperatorQueries.layer))
