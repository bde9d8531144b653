/**
 * Linking and retiring a provider account (issue 12 §2, decisions §10), shared by the operator API, `kassa admin
 * provider` and the operator dashboard:
 *
 * 1. the key is checked with the provider (`GET /v1/account`): refused → {@link LinkRefused}, nothing stored;
 * 2. a webhook endpoint is created at the provider for `{base_url}/provider-webhooks/stripe/{link_id}`;
 * 3. the link is stored (key and endpoint secret sealed) and the previous active link retired, in one transaction;
 * 4. the previous link's endpoint is deleted at the provider, best effort, after the answer (in the background: the
 *    request already made two provider calls of up to 10 s each, and the request deadline is 15 s).
 *
 * No provider call runs inside a transaction. A provider that does not answer gets {@link ProviderUnavailable} (502).
 */
import type { Ids } from "@kassa/core"
import { Context, Effect, Layer, Option, type Redacted, Schema } from "effect"
import { ServerConfig } from "../config/ServerConfig.ts"
import { type NoAnswer, ProviderConnector, ProviderLinkId, type ProviderRefused } from "./ProviderConnector.ts"
import { ProviderLinks, type StoredLink } from "./ProviderLinks.ts"

/** The provider refused the key (or the endpoint with it): 422 `validation_failed` on `secret_key`. */
export class LinkRefused extends Schema.TaggedError<LinkRefused>()("LinkRefused", { message: Schema.String }) {}

/**
 * The provider accepted the key but refused the webhook endpoint (most often: it cannot reach `KASSA_BASE_URL`):
 * 502 `provider_error` naming the URL; nothing was stored.
 */
export class EndpointRefused extends Schema.TaggedError<EndpointRefused>()("EndpointRefused", {
  message: Schema.String
}) {}

/** The provider did not answer: 502 `provider_error`; nothing was stored. */
export class ProviderUnavailable extends Schema.TaggedError<ProviderUnavailable>()("ProviderUnavailable", {
  message: Schema.String
}) {}

const unavailable = (answer: NoAnswer, step: string) =>
  new ProviderUnavailable({
    message: `Stripe did not answer while ${step} (${answer.reason}); nothing was stored. Try again.`
  })

/** The path Stripe posts a link's events to (served by the next step of issue 12). */
export const webhookPath = (linkId: ProviderLinkId) => `/provider-webhooks/stripe/${linkId}`

export class ProviderLinking extends Context.Service<
  ProviderLinking,
  {
    readonly link: (
      applicationId: Ids.ApplicationId,
      secretKey: Redacted.Redacted<string>
    ) => Effect.Effect<
      { readonly link: StoredLink; readonly retired: Option.Option<StoredLink> },
      LinkRefused | EndpointRefused | ProviderUnavailable
    >
    /** Retires the active link and deletes its endpoint at the provider (best effort); none when none was active. */
    readonly retire: (applicationId: Ids.ApplicationId) => Effect.Effect<Option.Option<StoredLink>>
  }
>()("@kassa/server/providers/ProviderLinking") {
  static readonly layer = Layer.effect(
    ProviderLinking,
    Effect.gen(function* () {
      const connector = yield* ProviderConnector
      const links = yield* ProviderLinks
      const config = yield* ServerConfig
      // Background endpoint deletions end with the server (interrupted at shutdown, never left running).
      const scope = yield* Effect.scope

      /** Deletes a retired link's endpoint at the provider; on success the link records it. Never fails. */
      const retireEndpoint = (link: StoredLink) =>
        connector.retireWebhook(links.access(link), link.webhookEndpointId).pipe(
          Effect.flatMap((answer) =>
            answer._tag === "Retired"
              ? links.endpointRetired(link.id)
              : Effect.logWarning("The provider did not answer; the retired link's webhook endpoint is still there")
          ),
          Effect.catch((refused: ProviderRefused) =>
            Effect.logWarning(`The provider refused to delete the retired link's webhook endpoint: ${refused.message}`)
          ),
          Effect.annotateLogs({ provider_link_id: link.id, webhook_endpoint_id: link.webhookEndpointId })
        )

      const refusedKey = (refused: ProviderRefused) =>
        new LinkRefused({
          message: refused.field === "secret_key" ? refused.message : `Stripe refused the key: ${refused.message}`
        })
      const refusedEndpoint = (url: string) => (refused: ProviderRefused) =>
        refused.field === "secret_key"
          ? new LinkRefused({ message: refused.message })
          : new EndpointRefused({
              message: `Stripe refused the webhook endpoint ${url} (${refused.message}). Stripe must be able to reach KASSA_BASE_URL from the internet; nothing was stored.`
            })

      return ProviderLinking.of({
        link: Effect.fn("ProviderLinking.link")(function* (applicationId, secretKey) {
          const account = yield* connector.verifyLink(secretKey).pipe(Effect.mapError(refusedKey))
          if (account._tag === "NoAnswer") return yield* unavailable(account, "checking the key")
          const id = ProviderLinkId.make(crypto.randomUUID())
          const access = {
            id,
            secretKey: Effect.succeed(secretKey),
            endpointSecret: Effect.die("a link being created has no endpoint secret yet")
          }
          const url = `${config.baseUrl}${webhookPath(id)}`
          const endpoint = yield* connector.registerWebhook(access, url).pipe(Effect.mapError(refusedEndpoint(url)))
          if (endpoint._tag === "NoAnswer") return yield* unavailable(endpoint, "creating the webhook endpoint")
          const stored = yield* links.link({
            id,
            applicationId,
            provider: connector.provider,
            accountId: account.accountId,
            livemode: account.livemode,
            secretKey,
            webhookEndpointId: endpoint.endpointId,
            endpointSecret: endpoint.secret
          })
          if (Option.isSome(stored.retired)) yield* Effect.forkIn(retireEndpoint(stored.retired.value), scope)
          return stored
        }),
        retire: Effect.fn("ProviderLinking.retire")(function* (applicationId) {
          const retired = yield* links.retire(applicationId)
          if (Option.isSome(retired)) yield* retireEndpoint(retired.value)
          // Read again, so the answer shows whether the endpoint is gone.
          return Option.isSome(retired) ? Option.orElse(yield* links.find(retired.value.id), () => retired) : retired
        })
      })
    })
  )
}
