/**
 * The operator API (decisions §8) under `/admin/api/v1`: applications, their API keys and webhook secrets, deliveries,
 * dashboard users, the audit log, provider accounts and live refunds, for `kassa admin`, automation and tests. One
 * definition, like `MerchantApi`, from which the server's routes (`OperatorHandlers`), the CLI's typed client and the
 * document at `/admin/api/v1/openapi.json` derive. It is not part of the merchant contract, so it is a separate
 * `HttpApi` and never shows up in `/openapi.json`.
 *
 * Every endpoint runs {@link AdminAuthentication} first, then {@link InvalidRequest} (request decoding failures
 * → 422 `validation_failed` with every field, 400/413/415 `http_error`), with the same parse options as the merchant
 * API: every issue reported, unknown body fields refused.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import * as Application from "../domain/Application.ts"
import * as Payment from "../domain/Payment.ts"
import { AdminAuthentication } from "./AdminAuthentication.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"
import { InvalidRequest } from "./InvalidRequest.ts"
import * as OpenApiDocument from "./OpenApiDocument.ts"
import {
  ApiKeyList,
  ApiKeyView,
  ApplicationCreated,
  ApplicationList,
  ApplicationParams,
  AuditList,
  CreateKeyBody,
  CreateUserBody,
  DeliveryList,
  DeliveryParams,
  DeliveryResent,
  IssuedApiKeyView,
  KeyParams,
  LinkProviderBody,
  ListAuditQuery,
  ListDeliveriesQuery,
  MembershipBody,
  MembershipParams,
  PaymentParams,
  ProviderLinkView,
  UpdateUserBody,
  UserCreated,
  UserList,
  UserParams,
  UserView,
  WebhookSecretCreated
} from "./OperatorSchemas.ts"
import { CreateApplicationBody, UpdateApplicationBody } from "./OperatorSettings.ts"
import * as PaymentsApi from "./PaymentsApi.ts"

/** Where the operator API is mounted. */
export const operatorPrefix = "/admin/api/v1"

/** Its OpenAPI document, served without authentication like the merchant API's. */
export const operatorOpenApiPath = `${operatorPrefix}/openapi.json` as const

// Group identifiers are global keys in HttpApi (`effect/http-api/HttpApiGroup/<id>`): prefixed so they never meet
// a merchant API group.
export class OperatorApplicationsApi extends HttpApiGroup.make("operatorApplications")
  .add(
    HttpApiEndpoint.post("create", "/applications", {
      payload: CreateApplicationBody,
      success: ApplicationCreated,
      error: ErrorEnvelope.ValidationFailed
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Create an application",
        description:
          "Unset settings take their defaults. Answers with the application and its webhook secret, shown this once."
      })
    ),
    HttpApiEndpoint.get("list", "/applications", { success: ApplicationList }).annotateMerge(
      OpenApi.annotations({ summary: "List applications", description: "Every application, oldest first." })
    ),
    HttpApiEndpoint.get("retrieve", "/applications/:id", {
      params: ApplicationParams,
      success: Application.Application,
      error: ErrorEnvelope.NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Fetch an application" })),
    HttpApiEndpoint.patch("update", "/applications/:id", {
      params: ApplicationParams,
      payload: UpdateApplicationBody,
      success: Application.Application,
      error: [ErrorEnvelope.NotFound, ErrorEnvelope.ValidationFailed]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Change an application",
        description:
          "The fields sent replace the stored ones; `null` clears `return_url_host`, `webhook_url`, `checkout_logo_url` " +
          "and `checkout_brand_color`."
      })
    ),
    HttpApiEndpoint.post("rotateWebhookSecret", "/applications/:id/webhook-secret", {
      params: ApplicationParams,
      success: WebhookSecretCreated,
      error: ErrorEnvelope.NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Regenerate the webhook secret",
        description: "For 24 hours deliveries are signed with the new and the previous secret, new first."
      })
    )
  )
  .annotateMerge(
    OpenApi.annotations({
      title: "Applications",
      description: "Applications and their settings (modes, methods, limits, webhook URL, checkout branding)."
    })
  ) {}

export class OperatorKeysApi extends HttpApiGroup.make("operatorKeys")
  .add(
    HttpApiEndpoint.post("create", "/applications/:id/keys", {
      params: ApplicationParams,
      payload: CreateKeyBody,
      success: IssuedApiKeyView,
      error: ErrorEnvelope.NotFound
    }).annotateMerge(
      OpenApi.annotations({ summary: "Issue an API key", description: "The only answer that shows the whole key." })
    ),
    HttpApiEndpoint.get("list", "/applications/:id/keys", {
      params: ApplicationParams,
      success: ApiKeyList,
      error: ErrorEnvelope.NotFound
    }).annotateMerge(
      OpenApi.annotations({ summary: "List API keys", description: "Display forms only, revoked keys included." })
    ),
    HttpApiEndpoint.post("roll", "/keys/:key_id/roll", {
      params: KeyParams,
      success: IssuedApiKeyView,
      error: ErrorEnvelope.NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Roll an API key",
        description: "Issues a key of the same mode and revokes this one at once. A revoked key cannot be rolled (404)."
      })
    ),
    HttpApiEndpoint.delete("revoke", "/keys/:key_id", {
      params: KeyParams,
      success: ApiKeyView,
      error: ErrorEnvelope.NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Revoke an API key",
        description: "Requests with the key get 401 from now on. Revoking a revoked key changes nothing."
      })
    )
  )
  .annotateMerge(
    OpenApi.annotations({ title: "API keys", description: "Issue, list and revoke an application's API keys." })
  ) {}

export class OperatorDeliveriesApi extends HttpApiGroup.make("operatorDeliveries")
  .add(
    HttpApiEndpoint.get("list", "/applications/:id/deliveries", {
      params: ApplicationParams,
      query: ListDeliveriesQuery,
      success: DeliveryList,
      error: [ErrorEnvelope.NotFound, ErrorEnvelope.ValidationFailed]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List webhook deliveries",
        description:
          "The application's deliveries, newest first, each with its attempts, in pages of `limit` (1–100, default " +
          "10); for the next page pass the last `id` as `starting_after`. Filters: `status`, `event`, `payment_id`, `mode`."
      })
    ),
    HttpApiEndpoint.post("resend", "/deliveries/:id/resend", {
      params: DeliveryParams,
      success: DeliveryResent,
      error: ErrorEnvelope.NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Resend a webhook",
        description:
          "Makes one immediate manual attempt of the same event (same `id`, fresh signature), whatever the delivery's " +
          "status. The schedule is not restarted; a successful resend ends a pending or failed delivery as succeeded."
      })
    )
  )
  .annotateMerge(
    OpenApi.annotations({
      title: "Webhook deliveries",
      description: "Webhook deliveries: their attempts, and resending one."
    })
  ) {}

export class OperatorUsersApi extends HttpApiGroup.make("operatorUsers")
  .add(
    HttpApiEndpoint.post("create", "/users", {
      payload: CreateUserBody,
      success: UserCreated,
      error: ErrorEnvelope.ValidationFailed
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Create a dashboard user",
        description:
          "E-mail addresses are unique (compared lower-case); passwords have at least 12 characters and are stored " +
          "as scrypt hashes. `operator_admin` users manage every application."
      })
    ),
    HttpApiEndpoint.get("list", "/users", { success: UserList }).annotateMerge(
      OpenApi.annotations({ summary: "List dashboard users", description: "With their memberships." })
    ),
    HttpApiEndpoint.patch("update", "/users/:id", {
      params: UserParams,
      payload: UpdateUserBody,
      success: UserView,
      error: [ErrorEnvelope.NotFound, ErrorEnvelope.ValidationFailed]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Change a dashboard user",
        description:
          "Set a new `password` (for a user who lost theirs: it clears the lock-out and ends every session), make " +
          "the user an operator admin or not, or deactivate (`active: false`: sign-in refused, every session ends, " +
          "memberships kept) and reactivate them. Users are never deleted: the audit log and refunds name them."
      })
    ),
    HttpApiEndpoint.put("setMembership", "/users/:id/memberships/:application_id", {
      params: MembershipParams,
      payload: MembershipBody,
      success: UserView,
      error: ErrorEnvelope.NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Give a user a role in an application",
        description: "owner (everything), developer (keys, webhooks, deliveries, payments) or viewer (read only)."
      })
    ),
    HttpApiEndpoint.delete("removeMembership", "/users/:id/memberships/:application_id", {
      params: MembershipParams,
      success: UserView,
      error: ErrorEnvelope.NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Remove a user from an application" })),
    HttpApiEndpoint.get("audit", "/audit", { query: ListAuditQuery, success: AuditList }).annotateMerge(
      OpenApi.annotations({
        summary: "Read the audit log",
        description:
          "Every dashboard and operator action, newest first: who, what, on which application, when, from where. " +
          "For the next page pass the last `id` as `before`."
      })
    )
  )
  .annotateMerge(
    OpenApi.annotations({
      title: "Users and audit",
      description: "Dashboard users, their memberships, and the audit log."
    })
  ) {}

export class OperatorProviderAccountsApi extends HttpApiGroup.make("operatorProviderAccounts")
  .add(
    HttpApiEndpoint.put("link", "/applications/:id/provider-account", {
      params: ApplicationParams,
      payload: LinkProviderBody,
      success: ProviderLinkView,
      error: [ErrorEnvelope.NotFound, ErrorEnvelope.ValidationFailed, ErrorEnvelope.ProviderError]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Link a Stripe or Mollie account",
        description:
          "Checks the key with the provider named by `provider` (a key it refuses: 422 on `secret_key`, nothing stored). " +
          "Stripe: creates a webhook endpoint there for `{base_url}/provider-webhooks/stripe/{link_id}` and stores the " +
          "key and the endpoint's secret encrypted. Mollie: stores the key encrypted, no endpoint (each payment names " +
          "`{base_url}/provider-webhooks/mollie/{link_id}`; `webhook_endpoint_id` is null). A previous link, of either " +
          "provider, is retired (its endpoint deleted at Stripe, best effort); it still settles, cancels and refunds the " +
          "payments it opened. The provider not answering in time, or refusing the endpoint (it must reach the base " +
          "URL): 502 `provider_error`, nothing stored and nothing left at the provider."
      })
    ),
    HttpApiEndpoint.get("show", "/applications/:id/provider-account", {
      params: ApplicationParams,
      success: ProviderLinkView,
      error: ErrorEnvelope.NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Show the linked provider account",
        description: "The active link; 404 `not_found` when none is linked. The key is shown only as `key_display`."
      })
    ),
    HttpApiEndpoint.delete("retire", "/applications/:id/provider-account", {
      params: ApplicationParams,
      success: ProviderLinkView,
      error: ErrorEnvelope.NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Retire the linked provider account",
        description:
          "New live payments are refused until another account is linked; the retired link still settles, cancels and " +
          "refunds the payments it opened. Its webhook endpoint (Stripe) is deleted at the provider, best effort. 404 when " +
          "none is linked."
      })
    )
  )
  .annotateMerge(
    OpenApi.annotations({
      title: "Payment provider account",
      description: "The live payment provider account linked to an application."
    })
  ) {}

export class OperatorPaymentsApi extends HttpApiGroup.make("operatorPayments")
  .add(
    HttpApiEndpoint.post("refund", "/payments/:id/refunds", {
      params: PaymentParams,
      payload: PaymentsApi.RefundPayload,
      success: Payment.Payment.pipe(HttpApiSchema.status(201)),
      error: [
        ErrorEnvelope.NotFound,
        ErrorEnvelope.PaymentNotRefundable,
        ErrorEnvelope.RefundAmountExceedsRefundable,
        ErrorEnvelope.PaymentBusy,
        ErrorEnvelope.ProviderError,
        ErrorEnvelope.ValidationFailed
      ]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Refund a live payment",
        description:
          'A live refund requested by service staff, of any application (decisions §10, "Live refunds"): by default ' +
          "all that is still refundable. The amount is reserved as a `pending` refund, then asked of the payment " +
          "provider with the refund's id as Idempotency-Key; the answer is the payment after the provider's answer " +
          "(the refund `succeeded`, or still `pending` while the provider has not answered; Kassa asks again in the " +
          "background). A refund the provider refuses (Mollie: a second refund of the same amount within an hour) " +
          "is recorded `failed`, its amount released, and answered 502 `provider_error` with the provider's reason. " +
          "A test payment: 409 `payment_not_refundable` (test payments are refunded through the merchant API with " +
          "a test key)."
      })
    )
  )
  .annotateMerge(
    OpenApi.annotations({ title: "Payments", description: "Live payments: refunds requested by the operator." })
  ) {}

export class OperatorApi extends HttpApi.make("kassa-operator")
  .add(OperatorApplicationsApi)
  .add(OperatorKeysApi)
  .add(OperatorDeliveriesApi)
  .add(OperatorUsersApi)
  .add(OperatorProviderAccountsApi)
  .add(OperatorPaymentsApi)
  .prefix(operatorPrefix)
  .middleware(InvalidRequest)
  // Added last, so it wraps the other middleware and runs first.
  .middleware(AdminAuthentication)
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotateMerge(
    OpenApi.annotations({
      title: "Kassa operator API",
      version: "1.0.0",
      description:
        "Applications, API keys, webhook secrets, webhook deliveries, payment provider accounts, dashboard users and the audit log. Authenticate with `Authorization: Bearer <KASSA_ADMIN_TOKEN>`. " +
        'Errors are `{"error":{"code","message",…}}` as in the merchant API.',
      servers: OpenApiDocument.servers,
      transform: OpenApiDocument.transform({ rateLimited: false })
    })
  ) {}
