/**
 * One webhook attempt over HTTP (decisions §7): POST the event's exact body with the specification's headers and a
 * fresh signature, count a 2xx status line within 10 s as success, never follow a redirect (a 3xx is a failure),
 * read and keep at most 1,024 bytes of the answer, and name what went wrong in a short error code.
 *
 * The receiver's answer is attacker-controlled: it is kept as text (invalid UTF-8 and NUL replaced), never parsed,
 * and never more than {@link maxBodyBytes}. Secrets and signatures are never logged.
 *
 * In production, URLs must be `https` and every address connected to must be public (SafeAddress): the check runs
 * in the socket's own DNS lookup, so the checked address is the one connected to. Connections are kept alive per
 * receiver; a request that finds its reused connection closed by the receiver is sent once more on a fresh one
 * (it never reached the receiver).
 */
import * as http from "node:http"
import * as https from "node:https"
import { WebhookSignature } from "@kassa/core"
import { Context, Duration, Effect, Layer } from "effect"
import type { NonEmptyReadonlyArray } from "effect/Array"
import type { Mac } from "effect/crypto"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as Tracing from "../observability/Tracing.ts"
import * as SafeAddress from "./SafeAddress.ts"

/** The receiver must answer with a status line within this time (specification, Limits). */
export const defaultTimeout: Duration.Duration = Duration.seconds(10)

/** At most this much of the answer's body is read and kept. */
export const maxBodyBytes = 1024

/** Error codes of a failed attempt that got no status (decisions §7, "…" extended as named here). */
export type AttemptError =
  | "timeout"
  | "connection_refused"
  | "connection_reset"
  | "dns"
  | "tls"
  | "blocked_address"
  | "https_required"
  | "invalid_url"
  | "no_webhook_url"
  | "unreachable"
  | "invalid_response"
  | "connection_error"

export interface Delivery {
  /** The webhook URL read for this attempt. */
  readonly url: string
  readonly event: string
  /** The exact body, the same bytes every attempt. */
  readonly body: string
  /** Signing secrets, in `v1=` order (current first). */
  readonly secrets: NonEmptyReadonlyArray<string>
  /** `t`: the attempt's start, in Unix seconds. */
  readonly timestamp: number
}

export interface Outcome {
  readonly succeeded: boolean
  readonly responseStatus: number | null
  readonly error: AttemptError | null
  readonly responseBody: string | null
  readonly durationMs: number
}

export interface SenderOptions {
  /** Production: https only, public addresses only. */
  readonly production: boolean
  readonly timeout?: Duration.Duration | undefined
  /** DNS, for tests that need a name to resolve somewhere chosen (defaults to the system resolver). */
  readonly resolver?: SafeAddress.Resolver | undefined
  /** Kept-alive connections per receiver (host and port). */
  readonly maxSocketsPerHost?: number | undefined
}

const decoder = new TextDecoder("utf-8", { fatal: false })

/** The kept start of a body: UTF-8 with replacement characters, and no NUL (PostgreSQL text cannot hold it). */
export const bodyText = (bytes: Uint8Array): string => decoder.decode(bytes).replaceAll("\u0000", "\uFFFD")

const tlsCodes = new Set([
  "EPROTO",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "HOSTNAME_MISMATCH"
])

/** The error code of a failed request, from Node's error. */
export const classifyError = (error: unknown): AttemptError => {
  if (SafeAddress.isBlockedAddressError(error)) return "blocked_address"
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : ""
  switch (code) {
    case "ECONNREFUSED":
      return "connection_refused"
    case "ECONNRESET":
    case "EPIPE":
      return "connection_reset"
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_FAIL":
    case "EAI_NODATA":
    case "EAI_NONAME":
    case "ENODATA":
    case "ESERVFAIL":
      return "dns"
    case "ETIMEDOUT":
    case "ESOCKETTIMEDOUT":
      return "timeout"
    case "EHOSTUNREACH":
    case "ENETUNREACH":
    case "EHOSTDOWN":
    case "ENETDOWN":
      return "unreachable"
  }
  if (code.startsWith("ERR_TLS_") || code.startsWith("ERR_SSL_") || code.startsWith("CERT_") || tlsCodes.has(code)) {
    return "tls"
  }
  if (code.startsWith("HPE_")) return "invalid_response"
  return "connection_error"
}

const failed = (error: AttemptError, durationMs: number): Outcome => ({
  succeeded: false,
  responseStatus: null,
  error,
  responseBody: null,
  durationMs
})

interface Exchange {
  readonly status: number | null
  readonly body: string | null
  readonly error: unknown
  /** The request failed on a kept-alive connection before any answer: the receiver never saw it. */
  readonly staleConnection: boolean
}

export interface Sender {
  /** Makes one attempt; never fails: every problem is an outcome. */
  readonly send: (delivery: Delivery) => Effect.Effect<Outcome, never, Mac.Mac>
}

/** A sender with its own kept-alive connections; they are closed with the scope. */
export const make = Effect.fnUntraced(function* (options: SenderOptions) {
  const timeoutMs = Duration.toMillis(options.timeout ?? defaultTimeout)
  const lookup = SafeAddress.checkedLookup(options.resolver ?? SafeAddress.systemResolver, options.production)
  const agentOptions = {
    keepAlive: true,
    maxSockets: options.maxSocketsPerHost ?? 64,
    maxFreeSockets: options.maxSocketsPerHost ?? 64,
    scheduling: "lifo" as const
  }
  const httpAgent = new http.Agent(agentOptions)
  const httpsAgent = new https.Agent(agentOptions)
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      httpAgent.destroy()
      httpsAgent.destroy()
    })
  )

  /** One request; `deadline` bounds the whole exchange (status line and the body read). */
  const exchange = (target: URL, headers: http.OutgoingHttpHeaders, body: string, deadline: number) =>
    Effect.callback<Exchange>((resume) => {
      let settled = false
      let status: number | null = null
      const chunks: Array<Uint8Array> = []
      let size = 0
      const transport = target.protocol === "https:" ? https : http
      const request = transport.request(target, {
        method: "POST",
        headers,
        agent: target.protocol === "https:" ? httpsAgent : httpAgent,
        lookup
      })
      const settle = (error: unknown) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        const kept = status === null ? null : bodyText(Buffer.concat(chunks, size))
        const staleConnection =
          status === null && error !== null && request.reusedSocket && classifyError(error) === "connection_reset"
        resume(Effect.succeed({ status, body: kept, error: status === null ? error : null, staleConnection }))
      }
      // The status line must arrive in time; once it has, the outcome is decided and the body read just stops.
      const timer = setTimeout(
        () => {
          settle(status === null ? Object.assign(new Error("timeout"), { code: "ETIMEDOUT" }) : null)
          request.destroy()
        },
        Math.max(0, deadline - performance.now())
      )
      request.on("response", (response) => {
        status = response.statusCode ?? null
        response.on("data", (chunk: Buffer) => {
          if (settled) return
          const room = maxBodyBytes - size
          const taken = chunk.byteLength > room ? chunk.subarray(0, room) : chunk
          chunks.push(taken)
          size += taken.byteLength
          if (size >= maxBodyBytes) {
            settle(null)
            // The rest is never read: the connection is closed rather than drained.
            response.destroy()
          }
        })
        response.on("end", () => settle(null))
        response.on("error", () => settle(null))
        response.on("close", () => settle(null))
      })
      request.on("error", (error) => settle(error))
      request.end(body)
      return Effect.sync(() => {
        settled = true
        clearTimeout(timer)
        request.destroy()
      })
    })

  const send = (delivery: Delivery): Effect.Effect<Outcome, never, Mac.Mac> =>
    Effect.gen(function* () {
      const started = performance.now()
      const elapsed = () => Math.round(performance.now() - started)
      const target = URL.parse(delivery.url)
      if (target === null || (target.protocol !== "https:" && target.protocol !== "http:")) {
        return failed("invalid_url", elapsed())
      }
      if (options.production) {
        if (target.protocol !== "https:") return failed("https_required", elapsed())
        // IP literals never reach the lookup: check them here.
        const literal = SafeAddress.literalHost(target.hostname)
        if (literal !== null && !SafeAddress.isPublic(literal)) return failed("blocked_address", elapsed())
      }
      const signature = yield* WebhookSignature.sign({
        secrets: delivery.secrets,
        timestamp: delivery.timestamp,
        payload: delivery.body
      }).pipe(Effect.orDie)
      const headers: http.OutgoingHttpHeaders = {
        "content-type": "application/json",
        "user-agent": WebhookSignature.userAgent,
        [WebhookSignature.eventHeaderName.toLowerCase()]: delivery.event,
        [WebhookSignature.signatureHeaderName.toLowerCase()]: signature,
        "content-length": Buffer.byteLength(delivery.body)
      }
      // The attempt's span (Dispatcher), so the receiver's trace can join the sender's (W3C Trace Context).
      const traceparent = yield* Tracing.currentTraceparent
      if (traceparent !== undefined) headers.traceparent = traceparent
      const deadline = started + timeoutMs
      let result = yield* exchange(target, headers, delivery.body, deadline)
      if (result.staleConnection) result = yield* exchange(target, headers, delivery.body, deadline)
      if (result.status === null) return failed(classifyError(result.error), elapsed())
      return {
        succeeded: result.status >= 200 && result.status < 300,
        responseStatus: result.status,
        error: null,
        responseBody: result.body,
        durationMs: elapsed()
      }
    })

  return { send } satisfies Sender
})

export class WebhookSender extends Context.Service<WebhookSender, Sender>()("@kassa/server/webhooks/WebhookSender") {
  /** Production rules from `KASSA_ENV`; the 10 s limit. */
  static readonly layer = Layer.effect(
    WebhookSender,
    Effect.gen(function* () {
      const config = yield* ServerConfig
      return WebhookSender.of(yield* make({ production: config.environment === "production" }))
    })
  )
}
