/**
 * A fault-injecting HTTP proxy for the retry tests: each request takes the next step of a script, which either
 * answers by itself (a 5xx, a 429, an HTML page, a reset, silence) or forwards the request to the real server —
 * optionally throwing the real answer away afterwards, as a network failure after the server did the work would.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface Answer {
  readonly status: number
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string
}

export type Step =
  /** Forward to the upstream server and pass its answer on, or `afterwards` throw it away. */
  | { readonly forward: true; readonly afterwards?: Answer | "reset" }
  /** Answer without forwarding. */
  | { readonly answer: Answer }
  /** Close the connection without answering. */
  | { readonly reset: true }
  /** Never answer (until the proxy closes). */
  | { readonly hang: true }

export interface RecordedRequest {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
  readonly at: number
}

export interface FaultProxy {
  readonly baseUrl: string
  /** Every request received, in order. */
  readonly requests: Array<RecordedRequest>
  /** Sets the script; requests beyond it are forwarded. */
  readonly script: (...steps: ReadonlyArray<Step>) => void
  readonly close: () => Promise<void>
}

/** A JSON error envelope answer, as Kassa sends it. */
export const envelope = (status: number, error: Record<string, unknown>, headers: Record<string, string> = {}) => ({
  answer: {
    status,
    headers: { "content-type": "application/json", "request-id": `req_proxy_${status}`, ...headers },
    body: JSON.stringify({ error })
  }
})

const readBody = (request: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    request.on("error", reject)
  })

const send = (response: ServerResponse, answer: Answer) => {
  response.writeHead(answer.status, answer.headers)
  response.end(answer.body ?? "")
}

export const startFaultProxy = async (upstream: string): Promise<FaultProxy> => {
  let steps: Array<Step> = []
  const requests: Array<RecordedRequest> = []

  const forward = async (request: IncomingMessage, body: string): Promise<Answer> => {
    const headers = Object.fromEntries(
      Object.entries(request.headers).flatMap(([name, value]) =>
        typeof value === "string" && name !== "host" && name !== "connection" ? [[name, value]] : []
      )
    )
    const method = request.method ?? "GET"
    const response = await fetch(`${upstream}${request.url ?? "/"}`, {
      method,
      headers,
      body: method === "GET" || method === "HEAD" ? null : body
    })
    const answerHeaders: Record<string, string> = {}
    response.headers.forEach((value, name) => {
      if (name !== "content-length" && name !== "transfer-encoding" && name !== "connection") {
        answerHeaders[name] = value
      }
    })
    return { status: response.status, headers: answerHeaders, body: await response.text() }
  }

  const server: Server = createServer(async (request, response) => {
    const body = await readBody(request)
    requests.push({
      method: request.method ?? "",
      url: request.url ?? "",
      headers: request.headers,
      body,
      at: Date.now()
    })
    const step: Step = steps.shift() ?? { forward: true }
    if ("reset" in step) return request.socket.destroy()
    if ("hang" in step) return
    if ("answer" in step) return send(response, step.answer)
    const answer = await forward(request, body)
    if (step.afterwards === "reset") return request.socket.destroy()
    send(response, step.afterwards ?? answer)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    script: (...next) => {
      steps = [...next]
      requests.length = 0
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
