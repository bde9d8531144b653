/**
 * A fixed answer (the same bytes for every request for the life of the process: `/docs`, `/openapi.json`) served as
 * a static file is: compressed once per coding and kept, with a strong `ETag`, `Vary: Accept-Encoding`, a short
 * `Cache-Control`, and `304 Not Modified` for a matching `If-None-Match`. `/docs` is 3.2 MB of HTML (Scalar and the
 * contract inline); sent whole to every request it cost ~8 ms of CPU each and 3.2 MB of the link (issue 23), brotli
 * makes it ~0.8 MB and a revalidation sends nothing.
 *
 * Compression runs once per coding on zlib's thread pool, at the first request that asks for it (most processes never
 * serve `/docs`), and that request waits for it; brotli quality 6 (~90 ms for `/docs`; 11, the default, took 5.5 s
 * for 11 % less). Each coding is its own representation, so each has its own validator (RFC 9110 §8.8.3).
 */
import { createHash } from "node:crypto"
import { promisify } from "node:util"
import { brotliCompress, constants, gzip } from "node:zlib"
import { Effect } from "effect"
import { HttpBody, HttpServerRequest, HttpServerResponse } from "effect/http"

export type Coding = "br" | "gzip" | "identity"

/**
 * Five minutes in any cache (the answer is public and the same for everyone), then a revalidation (304) — a new
 * release or `KASSA_BASE_URL` shows within five minutes.
 */
export const cacheControl = "public, max-age=300"

const compressBrotli = promisify(brotliCompress)
const compressGzip = promisify(gzip)

/** The coding to send for an `Accept-Encoding` header: brotli, else gzip, else none; `q=0` refuses a coding. */
export const chooseCoding = (acceptEncoding: string | undefined): Coding => {
  if (acceptEncoding === undefined || acceptEncoding.trim() === "") return "identity"
  const weights = new Map<string, number>()
  for (const part of acceptEncoding.toLowerCase().split(",")) {
    const [name = "", ...parameters] = part.split(";").map((piece) => piece.trim())
    const q = parameters.find((parameter) => parameter.startsWith("q="))
    const weight = q === undefined ? 1 : Number(q.slice(2))
    weights.set(name, Number.isFinite(weight) ? weight : 0)
  }
  const weightOf = (coding: string) => weights.get(coding) ?? weights.get("*") ?? 0
  const br = weightOf("br")
  const gz = Math.max(weightOf("gzip"), weights.get("x-gzip") ?? 0)
  if (br > 0 && br >= gz) return "br"
  return gz > 0 ? "gzip" : "identity"
}

/** Whether `If-None-Match` names `etag` (weak comparison, as RFC 9110 §13.1.2 has for GET) or is `*`. */
export const matches = (ifNoneMatch: string | undefined, etag: string) =>
  (ifNoneMatch ?? "").split(",").some((entry) => {
    const tag = entry.trim()
    return tag === "*" || (tag.startsWith("W/") ? tag.slice(2) : tag) === etag
  })

/**
 * Serves `response` (200, a byte body, its headers kept) as a cached answer. The returned effect is the handler:
 * call `make` once per distinct body, not per request.
 */
export const make = (
  response: HttpServerResponse.HttpServerResponse
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest> => {
  const body = response.body
  if (body._tag !== "Uint8Array") return Effect.succeed(response)
  const hash = createHash("sha256").update(body.body).digest("base64url")
  const encoded = new Map<Exclude<Coding, "identity">, Promise<Uint8Array>>()
  const encode = (coding: Exclude<Coding, "identity">) => {
    let bytes = encoded.get(coding)
    if (bytes === undefined) {
      bytes =
        coding === "br"
          ? compressBrotli(body.body, {
              params: {
                [constants.BROTLI_PARAM_QUALITY]: 6,
                [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
                [constants.BROTLI_PARAM_SIZE_HINT]: body.body.length
              }
            })
          : compressGzip(body.body)
      encoded.set(coding, bytes)
    }
    return bytes
  }
  return Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const wanted = chooseCoding(request.headers["accept-encoding"])
    const etagOf = (coding: Coding) => (coding === "identity" ? `"${hash}"` : `"${hash}-${coding}"`)
    const validators = { etag: etagOf(wanted), vary: "Accept-Encoding", "cache-control": cacheControl }
    if (matches(request.headers["if-none-match"], validators.etag)) {
      return HttpServerResponse.empty({ status: 304, headers: validators })
    }
    if (wanted === "identity") return HttpServerResponse.setHeaders(response, validators)
    // Compression cannot fail on bytes in memory; were it to, the answer goes uncompressed rather than failing.
    const bytes = yield* Effect.tryPromise(() => encode(wanted)).pipe(Effect.option)
    if (bytes._tag === "None")
      return HttpServerResponse.setHeaders(response, { ...validators, etag: etagOf("identity") })
    return HttpServerResponse.setBody(response, HttpBody.uint8Array(bytes.value, body.contentType)).pipe(
      HttpServerResponse.setHeaders({ ...validators, "content-encoding": wanted })
    )
  })
}
