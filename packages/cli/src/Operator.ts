/**
 * The operator API (`/admin/api/v1`, decisions §8) through the typed client effect derives from the core's contract,
 * `HttpApiClient.make(OperatorApi)`, with the admin token as bearer. Calls are sent, retried and their failures read
 * as the SDK's are (`@kassa/client`'s `sendWith`); failures become `CommandFailure`s with code, fields and Request-Id.
 *
 * Two choices differ from the SDK's, on purpose:
 * - The server judges every field: the client's copy of the contract encodes requests without their checks, so an
 *   invalid setting is the server's `validation_failed`, with the Request-Id an operator can quote.
 * - Only GET, PUT and DELETE are retried: the operator API takes no Idempotency-Key, so a repeated POST or PATCH
 *   could do its work twice (a second application, a second refund).
 *
 * An answer is checked against the contract, then printed as the server sent it (`--json`), so the output is the
 * API's own JSON. `@kassa/client` and `@kassa/core` are loaded on the first call, as `Merchant.ts` loads the SDK.
 */
import type { OperatorApi } from "@kassa/core"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { HttpClientResponse } from "effect/http"
import type { HttpApiClient } from "effect/http-api"
import type * as Redacted from "effect/Redacted"
import { toFailure } from "./Merchant.ts"
import { CommandFailure, failure } from "./Output.ts"

export interface OperatorSettings {
  readonly adminToken: Redacted.Redacted<string>
  readonly baseUrl: string
}

/** The typed client of the operator API. */
export type OperatorClient = HttpApiClient.ForApi<typeof OperatorApi.OperatorApi>

/** `group.endpoint` of every call of the operator API. */
export type Endpoint = {
  [G in keyof OperatorClient & string]: `${G}.${keyof OperatorClient[G] & string}`
}[keyof OperatorClient & string]

/** Why the transport failed: its cause (ECONNREFUSED …) rather than "fetch failed". */
const reason = (error: unknown): string => {
  let cause: unknown = error
  while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause
  return cause instanceof Error ? cause.message : String(cause)
}

const refused = (error: { readonly message: string; readonly fields: unknown }) =>
  failure(error.message, { code: "validation_failed", status: 422, fields: error.fields, request_id: null })

const load = Effect.promise(async () => {
  const [sdk, core, http, httpApi, effect] = await Promise.all([
    import("@kassa/client"),
    import("@kassa/core"),
    import("effect/http"),
    import("effect/http-api"),
    import("effect")
  ])
  // The contract as this client sends it: requests encoded without their checks, so the server judges them.
  const api = core.OperatorApi.OperatorApi.annotate(httpApi.HttpApi.PayloadParseOptions, {
    errors: "all",
    onExcessProperty: "error",
    disableChecks: true
  }).annotate(httpApi.HttpApi.QueryParseOptions, { errors: "all", disableChecks: true })
  return { sdk, core, http, httpApi, effect, api }
})

/**
 * Sends the call `at` (`group.endpoint`) with the request `send` makes of the typed client, and answers the
 * endpoint's success body as JSON (`A`: its schema's encoded type), after checking it against the contract.
 */
export const call = <A>(
  settings: OperatorSettings,
  at: Endpoint,
  send: (client: OperatorClient) => Effect.Effect<HttpClientResponse.HttpClientResponse, unknown>
): Effect.Effect<A, CommandFailure> =>
  Effect.flatMap(load, ({ sdk, core, http, httpApi, api }) => {
    const [group = "", endpoint = ""] = at.split(".")
    const baseUrl = settings.baseUrl.replace(/\/+$/, "")
    const groups = core.OperatorApi.OperatorApi.groups as Record<
      string,
      { endpoints: Record<string, { method: string }> }
    >
    const method = groups[group]?.endpoints[endpoint]?.method
    const decode = httpApi.HttpApiClient.decodeResponse(core.OperatorApi.OperatorApi, {
      group,
      endpoint
    } as never) as (response: HttpClientResponse.HttpClientResponse) => Effect.Effect<unknown, unknown>
    const sendOne = sdk.sendWith({
      baseUrl,
      maxRetries: method === "GET" || method === "PUT" || method === "DELETE" ? sdk.defaultMaxRetries : 0,
      timeout: sdk.defaultTimeout as Duration.Duration
    })
    return httpApi.HttpApiClient.make(api, { baseUrl }).pipe(
      Effect.provide(
        httpApi.HttpApiMiddleware.layerClient(core.AdminAuthentication.AdminAuthentication, ({ next, request }) =>
          next(http.HttpClientRequest.bearerToken(request, settings.adminToken))
        )
      ),
      Effect.flatMap((client) =>
        sendOne(
          send(client as unknown as OperatorClient),
          (response) => Effect.andThen(decode(response), response.json),
          undefined
        )
      ),
      Effect.provide(http.FetchHttpClient.layer),
      Effect.map((body) => body as A),
      Effect.mapError((error) =>
        error instanceof sdk.ConnectionError
          ? failure(`Could not reach the operator API at ${settings.baseUrl}: ${reason(error.cause)}`, {
              code: "connection_error"
            })
          : toFailure(sdk, error)
      )
    )
  }).pipe(
    // A request the contract cannot encode even unchecked (a value outside a list of literals): refused as the SDK
    // refuses it, `validation_failed` with its fields and no Request-Id.
    Effect.catchDefect((defect) =>
      Effect.flatMap(load, ({ core, effect }) =>
        Effect.fail(
          defect instanceof CommandFailure
            ? defect
            : effect.Schema.isSchemaError(defect)
              ? refused(core.RequestValidation.validationFailed(core.RequestValidation.fieldErrors(defect.issue)))
              : failure(defect instanceof Error ? defect.message : String(defect))
        )
      )
    )
  )
