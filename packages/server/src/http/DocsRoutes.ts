/**
 * The documentation routes: `/docs` (the API reference with SDK and curl snippets, Scalar bundled in effect so it
 * works offline), `/docs/refunds` (pages/DocsPages), and `/openapi.json` (the merchant contract as OpenAPI 3.1).
 * `/docs` and `/openapi.json` are the same bytes for the life of a process (this build's contract, `KASSA_BASE_URL`):
 * each is built once and served as a CachedAnswer — compressed once, with an `ETag` and 304s.
 */
import { MerchantApi } from "@kassa/core"
import { Effect, Layer, Scope } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiScalar, OpenApi } from "effect/http-api"
import * as DocsPages from "../pages/DocsPages.ts"
import * as CachedAnswer from "./CachedAnswer.ts"

const RefundsRoute = HttpRouter.add("GET", "/docs/refunds", Effect.sync(DocsPages.refunds))

/**
 * Adds the reference page's headers and serves it cached. Scalar's route builds its HTML once and answers the same
 * response each time, so the policy and the cached answer are made once, for that body.
 */
const ReferenceAnswer = HttpRouter.middleware((httpEffect) => {
  let cached: { readonly body: Uint8Array; readonly answer: ReturnType<typeof CachedAnswer.make> } | undefined
  return Effect.flatMap(httpEffect, (response) => {
    const body = response.body
    if (body._tag !== "Uint8Array" || response.status !== 200) return Effect.succeed(response)
    if (cached?.body !== body.body) {
      const withHeaders = HttpServerResponse.setHeaders(response, {
        "content-security-policy": DocsPages.referencePolicy(new TextDecoder().decode(body.body)),
        "x-frame-options": "DENY",
        "x-content-type-options": "nosniff",
        "referrer-policy": "same-origin"
      })
      cached = { body: body.body, answer: CachedAnswer.make(withHeaders) }
    }
    return cached.answer
  })
}).layer

/**
 * The API reference, from the same contract as `/openapi.json`, with its SDK and curl snippets (the contract's
 * `x-codeSamples`); Scalar's script is bundled, fonts are local. Its server is this one (`KASSA_BASE_URL`), so
 * "try it" and the snippets' address need no editing.
 *
 * Built at its first request, not at the start: effect's Scalar route imports Scalar's bundled script (a 6 MB string,
 * held twice in the heap, as its module's source and as its value) when its layer is built, which every server start
 * (and every test's) would otherwise pay in memory and CPU for a page few requests ever ask for.
 */
const referenceRoute = (baseUrl: string) =>
  HttpRouter.use((router) =>
    Effect.gen(function* () {
      // The router's own scope: the reference, once built, lives as long as the server.
      const scope = yield* Scope.Scope
      const reference = yield* Effect.cached(
        HttpRouter.toHttpEffect(
          HttpApiScalar.layer(
            MerchantApi.MerchantApi.annotate(OpenApi.Servers, [{ url: baseUrl, description: "This Kassa server" }]),
            { path: "/docs", scalar: { withDefaultFonts: false } }
          ).pipe(Layer.provide(ReferenceAnswer))
        ).pipe(Effect.provideService(Scope.Scope, scope))
      )
      yield* router.add("GET", "/docs", Effect.flatten(reference))
    })
  )

/** `/openapi.json`: the merchant contract, built at the first request and kept. */
const OpenApiRoute = HttpRouter.use((router) => {
  let answer: ReturnType<typeof CachedAnswer.make> | undefined
  return router.add(
    "GET",
    "/openapi.json",
    Effect.suspend(() => {
      answer ??= CachedAnswer.make(HttpServerResponse.jsonUnsafe(OpenApi.fromApi(MerchantApi.MerchantApi)))
      return answer
    })
  )
})

/** The docs routes for a server at `baseUrl` (`KASSA_BASE_URL`). */
export const layerWith = (baseUrl: string) => Layer.mergeAll(RefundsRoute, referenceRoute(baseUrl), OpenApiRoute)

export const routes = [
  { method: "GET", path: "/docs" },
  { method: "GET", path: "/docs/refunds" },
  { method: "GET", path: "/openapi.json" }
] as const
