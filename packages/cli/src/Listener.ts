/**
 * The receiver of `kassa webhooks listen`: a node:http server that verifies each delivery with the webhook secret,
 * prints it, and answers 200 (valid) or 400 (invalid) — or, with a forward URL, passes the request on untouched (the
 * raw body bytes and every end-to-end header, the signature ones included) and relays the answer.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { check, type Verdict } from "./Verification.ts"

export interface ListenOptions {
  readonly secret: string
  readonly forwardTo: string | undefined
  readonly toleranceSeconds: number | undefined
  readonly json: boolean
  readonly print: (line: string) => void
}

// Hop-by-hop headers and the ones fetch sets itself; everything else is forwarded as received.
const notForwarded = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
  "content-length",
  "expect"
])

const readBody = async (request: IncomingMessage) => {
  const chunks: Array<Buffer> = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

const headerText = (value: string | ReadonlyArray<string> | undefined) =>
  value === undefined ? undefined : typeof value === "string" ? value : value.join(",")

interface Forwarded {
  readonly url: string
  readonly status: number | null
  readonly error?: string
}

const forward = async (url: string, request: IncomingMessage, body: Buffer, response: ServerResponse) => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || notForwarded.has(name)) continue
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item)
  }
  try {
    const answer = await fetch(url, {
      method: request.method ?? "POST",
      headers,
      redirect: "manual",
      ...(request.method === "GET" || request.method === "HEAD" ? {} : { body: new Uint8Array(body) })
    })
    const bytes = Buffer.from(await answer.arrayBuffer())
    const contentType = answer.headers.get("content-type")
    response.writeHead(answer.status, contentType === null ? {} : { "content-type": contentType }).end(bytes)
    return { url, status: answer.status } satisfies Forwarded
  } catch (error) {
    const message =
      error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)
    response
      .writeHead(502, { "content-type": "text/plain; charset=utf-8" })
      .end(`kassa webhooks listen: ${url}: ${message}`)
    return { url, status: null, error: message } satisfies Forwarded
  }
}

const describe = (verdict: Verdict, forwarded: Forwarded | undefined, request: IncomingMessage) => {
  const time = new Date().toISOString()
  const what = verdict.valid
    ? `${verdict.event}  ${verdict.id}  payment ${verdict.payment_id ?? "-"} (${verdict.payment_status ?? "-"})  valid signature`
    : `${request.method ?? "?"} ${request.url ?? "/"}  INVALID (${verdict.reason}): ${verdict.message}${
        verdict.skew_seconds === null ? "" : ` [skew ${verdict.skew_seconds} s]`
      }`
  const where =
    forwarded === undefined
      ? ""
      : `  -> ${forwarded.url}: ${forwarded.status === null ? `failed (${forwarded.error ?? "?"})` : `HTTP ${forwarded.status}`}`
  return `${time}  ${what}${where}`
}

export const makeListener = (options: ListenOptions): Server =>
  createServer((request, response) => {
    void (async () => {
      const body = await readBody(request)
      const verdict = await check(
        new Uint8Array(body),
        headerText(request.headers["x-service-signature"]),
        options.secret,
        { toleranceSeconds: options.toleranceSeconds }
      )
      let forwarded: Forwarded | undefined
      if (options.forwardTo !== undefined) {
        forwarded = await forward(options.forwardTo, request, body, response)
      } else if (verdict.valid) {
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ received: true }))
      } else {
        response
          .writeHead(400, { "content-type": "text/plain; charset=utf-8" })
          .end(`${verdict.reason}: ${verdict.message}`)
      }
      options.print(
        options.json
          ? JSON.stringify({
              received_at: new Date().toISOString(),
              method: request.method,
              path: request.url,
              ...verdict,
              ...(forwarded === undefined ? {} : { forwarded })
            })
          : describe(verdict, forwarded, request)
      )
    })().catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500).end()
      options.print(`error: ${error instanceof Error ? error.message : String(error)}`)
    })
  })
