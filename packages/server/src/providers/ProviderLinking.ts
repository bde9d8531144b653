/**
 * Linking and retiring a provider account (issue 12 §2, decisions §10, §11), shared by the operator API, `kassa admin
 * provider` and the operator dashboard, for whichever provider the operator names:
 *
 * 1. the key is checked with the provider (`verifyLink`): refused → {@link LinkRefused}, nothing stored;
 * 2. the provider's webhook endpoint is created for `{base_url}/provider-webhooks/{provider}/{link_id}`, or nothing
 *    for a provider whose webhook is named on each payment (Mollie: `PerPayment`);
 * 3. the link is stored (key and endpoint secret sealed) and the previous active link, of either provider, retired,
 *    in one transaction;
 * 4. the previous link's endpoint is deleted at its provider, best effort, after the answer (in the background).
 *
 * Linking fits its request (issue 21 §10, "Linking outlives its request"): steps 1 and 2 share one budget shorter
 * than the request deadline, and a provider too slow for it is answered {@link ProviderUnavailable} (502, "try
 * again") before the deadline. Whatever a link that was not stored made at the provider is deleted again in the
 * background: the endpoint call runs on the server's scope, so giving up on it (the budget, a refusal, a failed
 * store, an interrupted request) never loses its answer, and the clean-up retires the endpoint it answers.
 *
 * Every attempt is audited the same way from both paths: `provider_account.linked`, `provider_account.link_refused`
 * (the provider refused the key or the endpoint, or did not answer in time) and `provider_account.retired`, naming
 * the provider, the account and the key's display form, never the key. No provider call runs inside a transaction.
 */
import type { Ids } from "@kassa/core"
import { Context, Duration, Effect, Exit, Fiber, Layer, Option, Redacted, Schedule, Schema } from "effect"
import { type Actor, AuditLog } from "../audit/AuditLog.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import {
  type Connector,
  type LinkAccess,
  type NoAnswer,
  type PerPaymentWebhooks,
  ProviderLinkId,
  type ProviderName,
  type ProviderRefused,
  providerTitles,
  type RegisteredWebhook,
  webhookPath
} from "./ProviderConnector.ts"
import { ProviderConnectors } from "./ProviderConnectors.ts"
import { keyDisplay, ProviderLinks, type StoredLink } from "./ProviderLinks.ts"

/** The provider refused the key (or the endpoint with it): 422 `validation_failed` on `secret_key`. */
export class LinkRefused extends Schema.TaggedError<LinkRefused>()("LinkRefused", { message: Schema.String }) {}

/**
 * The provider accepted the key but refused the webhook endpoint (most often: it cannot reach `KASSA_BASE_URL`):
 * 502 `provider_error` naming the URL; nothing was stored.
 */
export class EndpointRefused extends Schema.TaggedError<EndpointRefused>()("EndpointRefused", {
  message: Schema.String
}) {}

/** The provider did not answer, or not within the link's budget: 502 `provider_error`; nothing was stored. */
export class ProviderUnavailable extends Schema.TaggedError<ProviderUnavailable>()("ProviderUnavailable", {
  message: Schema.String
}) {}

export type LinkFailure = LinkRefused | EndpointRefused | ProviderUnavailable

/**
 * How long the provider calls of one link may take together: the request deadline less 3 s for the store and the
 * answer (15 s → 12 s), and never less than half the deadline. Two calls of up to 10 s each would not fit.
 */
export const linkBudget = (requestDeadline: Duration.Duration): Duration.Duration =>
  Duration.max(Duration.subtract(requestDeadline, Duration.seconds(3)), Duration.divideUnsafe(requestDeadline, 2))

/** How long the background clean-up of a link that was not stored may take in all (its calls are bounded too). */
const cleanupBound = Duration.seconds(60)

export interface LinkRequest {
  readonly applicationId: Ids.ApplicationId
  readonly provider: ProviderName
  readonly secretKey: Redacted.Redacted<string>
  /** Who links: the audit entry's actor (a dashboard user, or the admin token). */
  readonly actor: Actor
}

export class ProviderLinking extends Context.Service<
  ProviderLinking,
  {
    readonly link: (
      request: LinkRequest
    ) => Effect.Effect<{ readonly link: StoredLink; readonly retired: Option.Option<StoredLink> }, LinkFailure>
    /**
     * Retires the active link and deletes its endpoint at the provider (best effort; a provider without endpoints
     * has nothing to delete); none when none was active.
     */
    readonly retire: (applicationId: Ids.ApplicationId, actor: Actor) => Effect.Effect<Option.Option<StoredLink>>
  }
>()("@kassa/server/providers/ProviderLinking") {
  static readonly layer = Layer.effect(
    ProviderLinking,
    Effect.gen(function* () {
      const connectors = yield* ProviderConnectors
      const links = yield* ProviderLinks
      const audit = yield* AuditLog
      const config = yield* ServerConfig
      const budget = linkBudget(config.requestDeadline)
      // Background work (endpoint calls, deletions) ends with the server: interrupted at shutdown, never left running.
      const scope = yield* Effect.scope

      /** Deletes a retired link's endpoint at its provider; on success the link records it. Never fails. */
      const retireEndpoint = (link: StoredLink) => {
        const endpointId = link.webhookEndpointId
        if (endpointId === null) return Effect.void
        return connectors
          .of(link.provider)
          .retireWebhook(links.access(link), endpointId)
          .pipe(
            Effect.flatMap((answer) =>
              answer._tag === "Retired"
                ? links.endpointRetired(link.id)
                : Effect.logWarning("The provider did not answer; the retired link's webhook endpoint is still there")
            ),
            Effect.catch((refused: ProviderRefused) =>
              Effect.logWarning(
                `The provider refused to delete the retired link's webhook endpoint: ${refused.message}`
              )
            ),
            Effect.annotateLogs({ provider_link_id: link.id, webhook_endpoint_id: endpointId })
          )
      }

      type Registration = Fiber.Fiber<RegisteredWebhook | PerPaymentWebhooks | NoAnswer, ProviderRefused>

      /**
       * What a link that was not stored made at the provider, deleted again: the endpoint call's own answer (waited
       * for, within its call bound), or, when that answer was lost, the provider's answer to the same call asked
       * again (the connector names the endpoint by the link id, e.g. Stripe's Idempotency-Key, so it replays the
       * endpoint it made rather than making another). A link stored after all keeps its endpoint. Never fails.
       */
      const abandon = (connector: Connector, access: LinkAccess, url: string, registration: Registration) =>
        Effect.gen(function* () {
          const first = yield* Fiber.await(registration)
          // Refused (nothing made) or interrupted (the server is stopping, and this with it); a link stored after all
          // keeps its endpoint; a provider without endpoints made none.
          if (Exit.isFailure(first) || first.value._tag === "PerPayment") return
          if (Option.isSome(yield* links.find(access.id))) return
          const answered = first.value
          const endpoint =
            answered._tag === "Webhook"
              ? answered
              : yield* connector.registerWebhook(access, url).pipe(
                  // A provider still running the first call may answer "in progress" (Stripe's 409): asked again.
                  Effect.flatMap((again) => (again._tag === "NoAnswer" ? Effect.fail(again) : Effect.succeed(again))),
                  Effect.retry({ times: 3, schedule: Schedule.spaced(Duration.seconds(2)) })
                )
          if (endpoint._tag !== "Webhook") return
          const retired = yield* connector.retireWebhook(access, endpoint.endpointId)
          yield* retired._tag === "Retired"
            ? Effect.logInfo("Deleted the webhook endpoint of a link that was not stored")
            : Effect.logWarning(
                "The provider did not answer; the endpoint of a link that was not stored is still there"
              )
        }).pipe(
          Effect.timeoutOrElse({
            duration: cleanupBound,
            orElse: () => Effect.logWarning("Gave up deleting the endpoint of a link that was not stored")
          }),
          Effect.catch((failure: ProviderRefused | NoAnswer) =>
            Effect.logWarning(
              failure._tag === "NoAnswer"
                ? `The provider did not answer; the endpoint of a link that was not stored may still be there (${failure.reason})`
                : `The provider refused to delete the endpoint of a link that was not stored: ${failure.message}`
            )
          ),
          Effect.annotateLogs({ provider: connector.provider, provider_link_id: access.id })
        )

      const linkOnce = Effect.fn("ProviderLinking.link")(function* (request: LinkRequest) {
        const connector = connectors.of(request.provider)
        const title = providerTitles[request.provider]
        const unavailable = (answer: NoAnswer, step: string) =>
          new ProviderUnavailable({
            message: `${title} did not answer while ${step} (${answer.reason}); nothing was stored. Try again.`
          })
        const id = ProviderLinkId.make(crypto.randomUUID())
        const access: LinkAccess = {
          id,
          secretKey: Effect.succeed(request.secretKey),
          endpointSecret: Effect.die("a link being created has no endpoint secret yet")
        }
        const url = `${config.baseUrl}${webhookPath(request.provider, id)}`
        // The endpoint call once it has started (the clean-up waits for its answer).
        let registration: Registration | undefined

        const atProvider = Effect.gen(function* () {
          const account = yield* connector.verifyLink(request.secretKey).pipe(
            Effect.mapError(
              (refused) =>
                new LinkRefused({
                  message:
                    refused.field === "secret_key" ? refused.message : `${title} refused the key: ${refused.message}`
                })
            )
          )
          if (account._tag === "NoAnswer") return yield* unavailable(account, "checking the key")
          // On the server's scope: giving up on the answer here does not cancel the call, whose answer the
          // clean-up needs (the endpoint it made).
          const started = yield* Effect.forkIn(connector.registerWebhook(access, url), scope)
          registration = started
          const endpoint = yield* Fiber.join(started).pipe(
            Effect.mapError((refused: ProviderRefused) =>
              refused.field === "secret_key"
                ? new LinkRefused({ message: refused.message })
                : new EndpointRefused({
                    message: `${title} refused the webhook endpoint ${url} (${refused.message}). ${title} must be able to reach KASSA_BASE_URL from the internet; nothing was stored.`
                  })
            )
          )
          if (endpoint._tag === "NoAnswer") return yield* unavailable(endpoint, "creating the webhook endpoint")
          return { account, endpoint }
        }).pipe(
          Effect.timeoutOrElse({
            duration: budget,
            orElse: () =>
              Effect.fail(
                new ProviderUnavailable({
                  message: `${title} did not answer within ${Duration.format(budget)}; nothing was stored, and anything made at ${title} for this attempt is removed again. Try again.`
                })
              )
          })
        )

        return yield* Effect.gen(function* () {
          const { account, endpoint } = yield* atProvider
          const stored = yield* links.link({
            id,
            applicationId: request.applicationId,
            provider: request.provider,
            accountId: account.accountId,
            livemode: account.livemode,
            secretKey: request.secretKey,
            endpoint:
              endpoint._tag === "Webhook"
                ? Option.some({ id: endpoint.endpointId, secret: endpoint.secret })
                : Option.none()
          })
          if (Option.isSome(stored.retired)) yield* Effect.forkIn(retireEndpoint(stored.retired.value), scope)
          return stored
        }).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit) || registration === undefined
              ? Effect.void
              : Effect.asVoid(Effect.forkIn(abandon(connector, access, url, registration), scope))
          )
        )
      })

      return ProviderLinking.of({
        link: (request) =>
          linkOnce(request).pipe(
            Effect.tap(({ link, retired }) =>
              audit.record(request.actor, {
                action: "provider_account.linked",
                applicationId: request.applicationId,
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
            ),
            Effect.tapError((failure) =>
              audit.record(request.actor, {
                action: "provider_account.link_refused",
                applicationId: request.applicationId,
                details: {
                  provider: request.provider,
                  key_display: keyDisplay(Redacted.value(request.secretKey)),
                  reason: failure._tag,
                  message: failure.message
                }
              })
            )
          ),
        retire: Effect.fn("ProviderLinking.retire")(function* (applicationId, actor) {
          const retired = yield* links.retire(applicationId)
          if (Option.isNone(retired)) return retired
          yield* retireEndpoint(retired.value)
          // Read again, so the answer shows whether the endpoint is gone.
          const link = Option.getOrElse(yield* links.find(retired.value.id), () => retired.value)
          yield* audit.record(actor, {
            action: "provider_account.retired",
            applicationId,
            target: link.id,
            details: {
              provider: link.provider,
              account_id: link.accountId,
              key_display: link.keyDisplay,
              webhook_endpoint_id: link.webhookEndpointId,
              // Null when the provider has no endpoint (Mollie).
              endpoint_deleted: link.webhookEndpointId === null ? null : link.endpointRetiredAt !== null
            }
          })
          return Option.some(link)
        })
      })
    })
  )
}
