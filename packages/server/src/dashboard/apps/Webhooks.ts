/**
 * An application's webhooks (`/dashboard/apps/:id/webhooks`): the URL (checked like the operator API checks it;
 * audited masked, as a query or user part may carry a token), a new signing secret (shown once; the previous one
 * keeps signing for 24 h, decisions §7), and a test event. Template: pages/dashboard/ApplicationWebhooks.ts.
 */
import { OperatorSettings, UrlMask, WebhookSecret } from "@kassa/core"
import { DateTime, Effect, Result, Schema } from "effect"
import { ApplicationRepository } from "../../applications/ApplicationRepository.ts"
import { AuditLog } from "../../audit/AuditLog.ts"
import { ServerConfig } from "../../config/ServerConfig.ts"
import * as WebhookPages from "../../pages/dashboard/ApplicationWebhooks.ts"
import { MerchantPayments } from "../../payments/MerchantPayments.ts"
import { InApplication, PostedForm, route, SignedIn } from "../DashboardRoute.ts"
import { frame, noticeCode, redirectHere } from "./ApplicationFrame.ts"

const isWebhookUrl = Schema.is(OperatorSettings.WebhookUrl)

/** Why a webhook URL typed into the form is refused, if it is. */
const webhookUrlError = (url: string, production: boolean): string | undefined => {
  if (url.length > 2048) return "The URL may be at most 2,048 characters."
  if (!isWebhookUrl(url)) return "Enter an absolute http:// or https:// URL, such as https://shop.example/webhooks."
  if (OperatorSettings.insecureInProduction(url, production)) return "Webhook URLs must use https in production."
  return undefined
}

const production = ServerConfig.useSync((config) => config.environment === "production")

/** The webhooks page, with `extra` (a refused form) over the request's notice. */
const page = (extra: Partial<WebhookPages.WebhooksView> = {}, status = 200) =>
  Effect.gen(function* () {
    const view = { now: yield* DateTime.now, production: yield* production, notice: yield* noticeCode, ...extra }
    return WebhookPages.webhooksPage(yield* frame, view, status)
  })

const saveUrl = Effect.gen(function* () {
  const { application } = yield* InApplication
  const typed = (yield* PostedForm).value("url")
  const error = typed.length === 0 ? undefined : webhookUrlError(typed, yield* production)
  if (error !== undefined) return yield* page({ notice: null, url: typed, urlError: error }, 422)
  const url = typed.length === 0 ? null : typed
  yield* (yield* ApplicationRepository).update(application.id, { webhook_url: url })
  yield* (yield* AuditLog).record((yield* SignedIn).actor, {
    action: "webhook.url_updated",
    applicationId: application.id,
    target: application.id,
    details: { from: UrlMask.mask(application.webhook_url), to: UrlMask.mask(url) }
  })
  return yield* redirectHere("/webhooks", url === null ? "url_cleared" : "url_saved")
})

const confirmSecret = Effect.map(frame, WebhookPages.confirmSecretPage)

const regenerateSecret = Effect.gen(function* () {
  const { application } = yield* InApplication
  const secret = yield* WebhookSecret.generate
  // The repository keeps the previous secret signing for 24 h (decisions §7).
  yield* (yield* ApplicationRepository).rotateWebhookSecret(application.id, secret)
  yield* (yield* AuditLog).record((yield* SignedIn).actor, {
    action: "webhook.secret_regenerated",
    applicationId: application.id,
    target: application.id
  })
  const until = DateTime.addDuration(yield* DateTime.now, WebhookSecret.rotationGrace)
  return WebhookPages.newSecretResponse(yield* frame, secret, until)
})

/**
 * A real test payment of this application, paid in the simulator: its `payment.paid` event goes through the outbox
 * and the delivery engine like any other, so it shows whether the receiver works end to end.
 */
const sendTestEvent = Effect.gen(function* () {
  const { application } = yield* InApplication
  const payments = yield* MerchantPayments
  const refuse = (message: string, status: number) => page({ notice: null, testError: message }, status)
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
  if (Result.isFailure(paid)) return yield* refuse(`The test payment could not be paid: ${paid.failure.message}`, 409)
  yield* (yield* AuditLog).record((yield* SignedIn).actor, {
    action: "webhook.test_sent",
    applicationId: application.id,
    target: paid.success.id,
    details: { payment_id: paid.success.id, amount: paid.success.amount, currency: paid.success.currency }
  })
  return yield* redirectHere("/webhooks", "test_sent")
})

const base = "/dashboard/apps/:id/webhooks"

export const routes = [
  route("GET", base, "view", page()),
  route("POST", `${base}/url`, "manage_webhooks", saveUrl),
  route("GET", `${base}/secret`, "manage_webhooks", confirmSecret),
  route("POST", `${base}/secret`, "manage_webhooks", regenerateSecret),
  route("POST", `${base}/test`, "manage_webhooks", sendTestEvent)
] as const
