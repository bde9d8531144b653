/**
 * The operator's applications (`/dashboard/operator/applications`): search, create (the webhook secret shown once),
 * one application's page with its status moves (the core's ApplicationLifecycle), settings (SettingsForm), keys and
 * members. Settings are read and checked through the core's settings catalogue (SettingsForm, OperatorSettings),
 * as the operator API checks them. Its provider link is ProviderAccount's. Templates: pages/dashboard/OperatorApplicationViews.ts.
 */
import {
  Application,
  ApplicationLifecycle,
  Mode,
  OperatorSettings,
  RequestValidation,
  WebhookSecret
} from "@kassa/core"
import { Effect, Option, Result, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { issueRecorded } from "../../applications/ApiKeyIssuing.ts"
import { ApiKeyRepository } from "../../applications/ApiKeyRepository.ts"
import {
  ApplicationRepository,
  parseApplicationId,
  type StoredApplication,
  toApplication
} from "../../applications/ApplicationRepository.ts"
import { AuditLog } from "../../audit/AuditLog.ts"
import { ServerConfig } from "../../config/ServerConfig.ts"
import { toDate } from "../../database/Columns.ts"
import { emptyMemberForm } from "../../pages/dashboard/ApplicationMembers.ts"
import { respondPage } from "../../pages/dashboard/DashboardLayout.ts"
import { notFoundPage } from "../../pages/dashboard/MessagePages.ts"
import {
  type ApplicationDetail,
  applicationCreatedPage,
  applicationPage,
  applicationsPage,
  keyIssuedPage,
  newApplicationPage,
  type StatusAction,
  settingsValuesOf
} from "../../pages/dashboard/OperatorApplicationViews.ts"
import { providerAccountSection } from "../../pages/dashboard/OperatorProviderAccount.ts"
import { providerTitles } from "../../providers/ProviderConnector.ts"
import { ProviderLinks } from "../../providers/ProviderLinks.ts"
import { Memberships } from "../../users/Memberships.ts"
import { parseUserId, UserRepository } from "../../users/UserRepository.ts"
import { PostedForm, type Response, redirect, route, SignedIn } from "../DashboardRoute.ts"
import { readMemberForm } from "../MemberForm.ts"
import { notice, param } from "./OperatorFrame.ts"
import { changedSettings, checkSettings } from "./SettingsForm.ts"

export const applicationsPath = "/dashboard/operator/applications"

/** How the dashboard presents each of the core's status moves (ApplicationLifecycle decides which are open). */
const moveViews: Record<
  ApplicationLifecycle.Move,
  Omit<StatusAction, "status"> & { readonly action: "approved" | "reactivated" | "suspended" | "disabled" }
> = {
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

const isStatus = Schema.is(Application.ApplicationStatus)
const isMode = Schema.is(Mode.Mode)

const production = ServerConfig.useSync((config) => config.environment === "production")

const newSecret = WebhookSecret.generate

/** The application of the path; none for a malformed or unknown id. */
export const pathApplication = Effect.gen(function* () {
  const id = parseApplicationId((yield* HttpRouter.params).id ?? "")
  if (Option.isNone(id)) return Option.none<StoredApplication>()
  return yield* (yield* ApplicationRepository).find(id.value)
})

/** Runs `f` with the application of the path (404 when there is none). */
export const withApplication = <R>(f: (application: StoredApplication) => Effect.Effect<Response, never, R>) =>
  Effect.flatMap(pathApplication, (found) => (Option.isNone(found) ? Effect.succeed(notFoundPage()) : f(found.value)))

/** One application's page, with `extra` (a refused form, a problem) and its status. */
export const detail = Effect.fn("OperatorApplications.detail")(function* (
  application: StoredApplication,
  extra: Partial<Pick<ApplicationDetail, "settings" | "member" | "problem">> & {
    readonly providerProblem?: string
  } = {},
  status = 200
) {
  const { viewer } = yield* SignedIn
  const { providerProblem, ...rest } = extra
  const link = yield* (yield* ProviderLinks).active(application.id)
  const page: ApplicationDetail = {
    viewer,
    notice: yield* notice,
    application: toApplication(application),
    actions: transitionsFrom(application.status),
    keys: yield* (yield* ApiKeyRepository).list(application.id),
    members: yield* (yield* UserRepository).members(application.id),
    settings: { values: settingsValuesOf(application), errors: {} },
    member: emptyMemberForm,
    provider: providerAccountSection({
      viewer,
      applicationId: application.id,
      // What the page shows of the link; never its sealed secrets.
      link: Option.match(link, {
        onNone: () => null,
        onSome: ({ provider, status, accountId, keyDisplay, livemode, webhookEndpointId, linkedAt }) => ({
          provider: providerTitles[provider],
          status,
          accountId,
          keyDisplay,
          livemode,
          webhookEndpointId,
          linkedAt
        })
      }),
      problem: providerProblem
    }),
    ...rest
  }
  return respondPage(applicationPage(page), status)
})

const list = Effect.gen(function* () {
  const all = yield* (yield* ApplicationRepository).list
  const q = yield* param("q")
  const status = yield* param("status")
  const needle = q.toLowerCase()
  const found = all
    .filter((application) => !isStatus(status) || application.status === status)
    .filter(
      (application) =>
        needle.length === 0 || application.name.toLowerCase().includes(needle) || application.id.startsWith(needle)
    )
    .reverse()
  return respondPage(
    applicationsPage({
      viewer: (yield* SignedIn).viewer,
      notice: yield* notice,
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

const newForm = SignedIn.useSync((signed) =>
  respondPage(
    newApplicationPage({
      viewer: signed.viewer,
      values: settingsValuesOf({ ...Application.defaults, name: "" }),
      errors: {}
    })
  )
)

const create = Effect.gen(function* () {
  const { viewer, actor } = yield* SignedIn
  const { values, checked } = checkSettings(
    yield* PostedForm,
    RequestValidation.validate(OperatorSettings.CreateApplicationBody),
    (sent) => ({ ...Application.defaults, ...sent }),
    yield* production
  )
  if (Result.isFailure(checked))
    return respondPage(newApplicationPage({ viewer, values, errors: checked.failure }), 422)
  const input = { ...Application.defaults, ...checked.success }
  const webhookSecret = yield* newSecret
  const created = yield* (yield* ApplicationRepository).create(input, webhookSecret)
  yield* (yield* AuditLog).record(actor, {
    action: "application.created",
    applicationId: created.id,
    target: created.id,
    details: { name: created.name, status: created.status }
  })
  return respondPage(applicationCreatedPage({ viewer, application: toApplication(created), webhookSecret }), 201)
})

const show = withApplication((application) => detail(application))

const changeStatus = withApplication((application) =>
  Effect.gen(function* () {
    const applications = yield* ApplicationRepository
    const wanted = (yield* PostedForm).value("status")
    const transition = transitionsFrom(application.status).find((candidate) => candidate.status === wanted)
    if (transition === undefined)
      return yield* detail(
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
        Option.getOrElse(current, () => application),
        { problem: "Someone else changed this application's status just now. Check it and try again." },
        409
      )
    }
    yield* (yield* AuditLog).record((yield* SignedIn).actor, {
      action: `application.${transition.action}`,
      applicationId: application.id,
      target: application.id,
      details: { from: application.status, to: transition.status }
    })
    return redirect(`${applicationsPath}/${application.id}`, transition.action)
  })
)

const saveSettings = withApplication((application) =>
  Effect.gen(function* () {
    const { values, checked } = checkSettings(
      yield* PostedForm,
      RequestValidation.validate(OperatorSettings.UpdateApplicationBody),
      (sent) => ({ ...application, ...sent }),
      yield* production
    )
    if (Result.isFailure(checked))
      return yield* detail(application, { settings: { values, errors: checked.failure } }, 422)
    const changed = changedSettings(application, checked.success)
    if (changed.length === 0) return redirect(`${applicationsPath}/${application.id}`, "settings_unchanged")
    yield* (yield* ApplicationRepository).update(application.id, checked.success)
    yield* (yield* AuditLog).record((yield* SignedIn).actor, {
      action: "application.settings_updated",
      applicationId: application.id,
      target: application.id,
      details: { changed }
    })
    return redirect(`${applicationsPath}/${application.id}`, "settings_saved")
  })
)

const issueKey = withApplication((application) =>
  Effect.gen(function* () {
    const { viewer, actor } = yield* SignedIn
    const mode = (yield* PostedForm).value("mode")
    if (!isMode(mode)) return yield* detail(application, { problem: "A key is either a test or a live key." }, 422)
    const issued = yield* issueRecorded(actor, application.id, mode)
    return respondPage(keyIssuedPage({ viewer, application: toApplication(application), mode, key: issued.key }), 201)
  })
)

const addMember = withApplication((application) =>
  Effect.gen(function* () {
    const read = yield* readMemberForm(yield* UserRepository, yield* PostedForm, "Create the user first.")
    if (Result.isFailure(read)) return yield* detail(application, { member: read.failure }, 422)
    const { user, role } = read.success
    yield* (yield* Memberships).set((yield* SignedIn).actor, application.id, user, role)
    return redirect(`${applicationsPath}/${application.id}`, "member_saved")
  })
)

const removeMember = withApplication((application) =>
  Effect.gen(function* () {
    const userId = parseUserId((yield* PostedForm).value("user_id"))
    const user = Option.isNone(userId) ? Option.none() : yield* (yield* UserRepository).find(userId.value)
    if (Option.isNone(user)) return notFoundPage()
    yield* (yield* Memberships).remove((yield* SignedIn).actor, application.id, user.value)
    return redirect(`${applicationsPath}/${application.id}`, "member_removed")
  })
)

export const routes = [
  route("GET", applicationsPath, "operator", list),
  route("POST", applicationsPath, "operator", create),
  route("GET", `${applicationsPath}/new`, "operator", newForm),
  route("GET", `${applicationsPath}/:id`, "operator", show),
  route("POST", `${applicationsPath}/:id/status`, "operator", changeStatus),
  route("POST", `${applicationsPath}/:id/settings`, "operator", saveSettings),
  route("POST", `${applicationsPath}/:id/keys`, "operator", issueKey),
  route("POST", `${applicationsPath}/:id/members`, "operator", addMember),
  route("POST", `${applicationsPath}/:id/members/remove`, "operator", removeMember)
] as const
