/**
 * A real webhook receiver for tests: an HTTP server on a free local port that records every request (raw body and
 * headers) and answers as the test says: a status, a body, a delay, or never.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface ReceivedRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** The body exactly as received. */
  readonly body: string
  readonly receivedAt: number
}

export interface Answer {
  readonly status?: number
  readonly headers?: Record<string, string>
  readonly body?: string | Uint8Array
  /** Milliseconds before answering. */
  readonly delayMs?: number
  /** Never answer (the connection stays open until the sender gives up). */
  readonly hang?: boolean
}

export interface WebhookReceiver {
  readonly url: (path?: string) => string
  readonly requests: Array<ReceivedRequest>
  /** Answers requests to `path` (default: every path) this way from now on. */
  readonly answer: (answer: Answer | ((request: ReceivedRequest) => Answer), path?: string) => void
  /** Requests to `path` (or all). */
  readonly received: (path?: string) => ReadonlyArray<ReceivedRequest>
  /** Waits until `count` requests reached `path` (or any path), or fails after `timeoutMs`. */
  readonly waitFor: (count: number, path?: string, timeoutMs?: number) => Promise<ReadonlyArray<ReceivedRequest>>
  readonly close: () => Promise<void>
}

export const startReceiver = async (): Promise<WebhookReceiver> => {
  const requests: Array<ReceivedRequest> = []
  const answers = new Map<string, Answer | ((request: ReceivedRequest) => Answer)>()
  const hanging = new Set<ServerResponse>()

  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const path = request.url ?? "/"
      const received: ReceivedRequest = {
        method: request.method ?? "",
        path,
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        receivedAt: Date.now()
      }
      requests.push(received)
      const rule = answers.get(path) ?? answers.get("*") ?? {}
      const answer = typeof rule === "function" ? rule(received) : rule
      if (answer.hang === true) {
        hanging.add(response)
        response.on("close", () => hanging.delete(response))
        return
      }
      const send = () => {
        response.writeHead(answer.status ?? 200, answer.headers ?? {})
        response.end(answer.body ?? "")
      }
      if (answer.delayMs === undefined) send()
      else setTimeout(send, answer.delayMs)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  const base = `http://127.0.0.1:${port}`

  const received = (path?: string) =>
    path === undefined ? [...requests] : requests.filter((request) => request.path === path)

  return {
    url: (path = "/hook") => `${base}${path}`,
    requests,
    answer: (answer, path = "*") => {
      answers.set(path, answer)
    },
    received,
    waitFor: async (count, path, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs
      while (received(path).length < count) {
        if (Date.now() > deadline) {
          throw new Error(`expected ${count} webhook(s) at ${path ?? "any path"}, got ${received(path).length}`)
        }
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      return received(path)
    },
    close: async () => {
      for (const response of hanging) response.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
