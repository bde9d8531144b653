/**
 * The Mollie SDK's HTTP under Kassa: its `HTTPClient` with a fetcher over `node:http`/`node:https` and kept-alive
 * agents, instead of the global `fetch` (undici). The SDK still builds, signs, validates and parses every call; only
 * the bytes travel another way: through undici a create cost 150–400 µs more CPU in a bare loop over TLS (677–983
 * against 490–562 µs a call), and most of the server's CPU under the SDK's call (bench/live.ts, "Session 10").
 * What the SDK expects of a fetcher is kept: a `Response`, an `AbortError` when the request's signal fires, and a
 * rejection for a connection that fails (the SDK sorts it as a connection or client error).
 *
 * One more send for a request whose kept-alive connection Mollie had already closed: a server closes an idle
 * connection when it likes (Node's own after 5 s, load balancers after their idle timeout), and a request written on
 * it before the close was seen fails with `ECONNRESET`/`EPIPE` and no answer — "no answer", and a live create fails
 * its payment for a connection nobody used. Node's documentation gives the remedy
 * (https://nodejs.org/api/http.html#requestreusedsocket), and Stripe's SDK does the same for Kassa's Stripe calls
 * (stripe-node's `RequestSender._shouldRetry`, "a closed connection is retried once even when retries are
 * disabled", https://github.com/stripe/stripe-node/issues/1040). Only a request safe to repeat (RFC 9110 §9.2.2): an
 * idempotent method, or a POST under an `Idempotency-Key`, which every create and refund Kassa sends carries, so a
 * Mollie that did run the first send replays it. The second send is inside the call's one bound.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import type { Fetcher } from "mollie-api-typescript"

/** Statuses whose `Response` may have no body (the Fetch standard's null-body statuses). */
const nullBody = new Set([101, 103, 204, 205, 304])

const answerOf = (answer: IncomingMessage, body: Buffer): Response => {
  const headers = new Headers()
  const raw = answer.rawHeaders
  for (let index = 0; index + 1 < raw.length; index += 2) headers.append(raw[index] as string, raw[index + 1] as string)
  const status = answer.statusCode ?? 502
  return new Response(
    nullBody.has(status) ? null : new Uint8Array(body.buffer as ArrayBuffer, body.byteOffset, body.byteLength),
    {
      status,
      statusText: answer.statusMessage ?? "",
      headers
    }
  )
}

const idempotentMethods = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"])

/** Whether a request may be sent again after its connection failed (see the module comment). */
const mayResend = (method: string, headers: Readonly<Record<string, string>>): boolean =>
  idempotentMethods.has(method.toUpperCase()) || headers["idempotency-key"] !== undefined

/** A connection closed under the request before any answer: the peer reset it, or it was gone when written. */
const closedUnderneath = (error: unknown): boolean =>
  typeof error === "object" &&
  error !== null &&
  "code" in error &&
  (error.code === "ECONNRESET" || error.code === "EPIPE")

/** A fetcher with its own kept-alive connections (one pool per connector, shared by its links' clients). */
export const nodeFetcher = (): { readonly fetcher: Fetcher; readonly close: () => void } => {
  const http = new HttpAgent({ keepAlive: true })
  const https = new HttpsAgent({ keepAlive: true })
  const fetcher: Fetcher = async (input, init) => {
    const request = input instanceof Request && init === undefined ? input : new Request(input, init)
    const body = request.body === null ? undefined : Buffer.from(await request.arrayBuffer())
    const url = new URL(request.url)
    const headers: Record<string, string> = {}
    request.headers.forEach((value, name) => {
      headers[name] = value
    })
    if (body !== undefined) headers["content-length"] = String(body.byteLength)
    const secure = url.protocol === "https:"
    const send = (again: boolean): Promise<Response> =>
      new Promise<Response>((resolve, reject) => {
        let answered = false
        const sent = (secure ? httpsRequest : httpRequest)(
          url,
          { method: request.method, headers, agent: secure ? https : http, signal: request.signal },
          (answer) => {
            answered = true
            const chunks: Array<Buffer> = []
            answer.on("data", (chunk: Buffer) => chunks.push(chunk))
            answer.on("end", () => {
              try {
                resolve(answerOf(answer, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)))
              } catch (error) {
                reject(error)
              }
            })
            answer.on("error", reject)
          }
        )
        sent.on("error", (error) => {
          // A kept-alive connection Mollie had closed while idle: once more on a new one (the module comment).
          const resend =
            again && !answered && sent.reusedSocket && closedUnderneath(error) && mayResend(request.method, headers)
          resolve(resend ? send(false) : Promise.reject(error))
        })
        sent.end(body)
      })
    return send(true)
  }
  return {
    fetcher,
    close: () => {
      http.destroy()
      https.destroy()
    }
  }
}
