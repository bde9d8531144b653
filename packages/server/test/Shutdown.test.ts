/**
 * Keep-alive and a graceful stop (issue 11 §6): idle connections outlive a load balancer's (65 s), and at shutdown
 * an answer still in flight finishes and carries `Connection: close`, so its client sends nothing more down a
 * connection that is about to close; idle connections are closed cleanly, not reset. Issue 23: a request that
 * crosses the stop on an idle keep-alive connection is answered (with `Connection: close`), not reset, and clients
 * looping on keep-alive connections through the stop see every request answered or refused at connect, and a stop
 * during a Redis outage ends (the client's close is bounded).
 */
import { Agent, request as httpRequest } from "node:http"
import { connect, type Socket } from "node:net"
import { Option, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { holdDatabase } from "./support/HeldDatabase.ts"
import { redisReachable, startRedisProxy } from "./support/TestRedis.ts"
import { databases, startServer } from "./support/TestServer.ts"

interface Connection {
  readonly socket: Socket
  /** Resolves with the next complete answer (status line and headers; the body is read by Content-Length). */
  readonly next: () => Promise<{ status: number; headers: Map<string, string>; body: string }>
  readonly closed: Promise<{ error: string | undefined }>
}

const open = async (baseUrl: string): Promise<Connection> => {
  const { hostname, port } = new URL(baseUrl)
  const socket = connect({ host: hostname, port: Number(port) })
  await new Promise((resolve) => socket.once("connect", resolve))
  let buffer = ""
  const waiting: Array<() => void> = []
  socket.on("data", (chunk: Buffer) => {
    buffer += chunk.toString()
    for (const wake of waiting.splice(0)) wake()
  })
  let error: string | undefined
  socket.on("error", (cause: NodeJS.ErrnoException) => {
    error = cause.code ?? cause.message
  })
  const closed = new Promise<{ error: string | undefined }>((resolve) =>
    socket.once("close", () => {
      for (const wake of waiting.splice(0)) wake()
      resolve({ error })
    })
  )
  const next = async () => {
    for (;;) {
      const end = buffer.indexOf("\r\n\r\n")
      if (end >= 0) {
        const [statusLine = "", ...lines] = buffer.slice(0, end).split("\r\n")
        const headers = new Map(
          lines.map((line) => [
            line.slice(0, line.indexOf(":")).toLowerCase(),
            line.slice(line.indexOf(":") + 1).trim()
          ])
        )
        const length = Number(headers.get("content-length") ?? 0)
        if (buffer.length >= end + 4 + length) {
          const body = buffer.slice(end + 4, end + 4 + length)
          buffer = buffer.slice(end + 4 + length)
          return { status: Number(statusLine.split(" ")[1]), headers, body }
        }
      }
      if (socket.destroyed) throw new Error(`connection closed before a whole answer: ${JSON.stringify(buffer)}`)
      await new Promise<void>((resolve) => waiting.push(resolve))
    }
  }
  return { socket, next, closed }
}

const get = (path: string, key?: string) =>
  `GET ${path} HTTP/1.1\r\nHost: kassa\r\n${key === undefined ? "" : `Authorization: Bearer ${key}\r\n`}\r\n`

describe.each(databases)("keep-alive and shutdown on %s", (database) => {
  it("keep-alive connections stay open 65 s, above load balancers' idle timeouts", async () => {
    const server = await startServer(database)
    try {
      const connection = await open(server.baseUrl)
      connection.socket.write(get("/healthz"))
      const answer = await connection.next()
      expect(answer.status).toBe(200)
      expect(answer.headers.get("connection")).toBe("keep-alive")
      expect(answer.headers.get("keep-alive")).toBe("timeout=65")
      connection.socket.destroy()
    } finally {
      await server.close()
    }
  })

  it("at shutdown an in-flight request finishes with Connection: close, and idle connections close cleanly", async () => {
    const server = await startServer(database)
    const { testKey } = await server.createApplication()
    const idle = await open(server.baseUrl)
    idle.socket.write(get("/healthz"))
    expect((await idle.next()).status).toBe(200)

    // A request held in flight: PGlite's one connection is taken, or PostgreSQL's api_keys locked.
    const release = await holdDatabase(server, database, "api_keys")
    const busy = await open(server.baseUrl)
    busy.socket.write(get("/api/v1/payments", testKey))
    const answer = busy.next()
    // Give the request time to reach the server and wait on the database.
    await new Promise((resolve) => setTimeout(resolve, 300))

    const stopping = server.close()
    // The idle connection is closed at once, without a reset.
    expect(await idle.closed).toEqual({ error: undefined })
    await release()
    const finished = await answer
    expect(finished.status).toBe(200)
    expect(finished.headers.get("connection")).toBe("close")
    expect(await busy.closed).toEqual({ error: undefined })
    await stopping
  })

  it.runIf(redisReachable)(
    "a stop while Redis is down ends in bounded time",
    async () => {
      const proxy = await startRedisProxy()
      const server = await startServer(database, {
        redisUrl: Option.some(Redacted.make(proxy.url()))
      })
      const { testKey } = await server.createApplication()
      proxy.cut()
      // The request that finds the outage is counted here; the command it sent stays with the Redis client.
      const answer = await fetch(`${server.baseUrl}/api/v1/payments`, {
        headers: { authorization: `Bearer ${testKey}` }
      })
      expect(answer.status).toBe(200)
      const started = Date.now()
      await server.close()
      expect(Date.now() - started).toBeLessThan(5_000)
      await proxy.close()
    },
    20_000
  )

  it("a request sent on an idle keep-alive connection as the stop begins is answered with Connection: close", async () => {
    const server = await startServer(database)
    const connection = await open(server.baseUrl)
    connection.socket.write(get("/livez"))
    expect((await connection.next()).headers.get("connection")).toBe("keep-alive")
    // The connection is idle when the stop begins; the next request is already on its way (same tick).
    const stopping = server.close()
    connection.socket.write(get("/livez"))
    const answer = await connection.next()
    expect(answer.status).toBe(200)
    expect(answer.headers.get("connection")).toBe("close")
    expect(await connection.closed).toEqual({ error: undefined })
    await stopping
  })

  it("clients looping on keep-alive connections through the stop: every request answered or refused at connect", async () => {
    const server = await startServer(database)
    // Past the rate limit every answer would be 429: these clients are not about it.
    const { testKey } = await server.createApplication({ rate_limit_per_minute: 1_000_000 })
    const { hostname, port } = new URL(server.baseUrl)
    let stopping: Promise<void> | undefined
    // Half the clients read payments (the database in flight at the stop), half ask /livez (answered at once).
    const loop = async (_: unknown, index: number) => {
      const path = index % 2 === 0 ? "/api/v1/payments?limit=1" : "/livez"
      // One connection per client, kept alive and reused, as a load balancer or an SDK keeps them.
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      const outcomes = { answered: 0, closing: 0, refused: 0, failed: [] as Array<string> }
      try {
        for (;;) {
          const outcome = await new Promise<{ status?: number; connection?: string; error?: string }>((resolve) => {
            const request = httpRequest(
              {
                host: hostname,
                port: Number(port),
                path,
                agent,
                headers: { authorization: `Bearer ${testKey}` }
              },
              (response) => {
                response.resume()
                response.on("end", () =>
                  resolve({ status: response.statusCode ?? 0, connection: String(response.headers.connection) })
                )
              }
            )
            request.on("error", (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }))
            request.end()
          })
          if (outcome.error === "ECONNREFUSED") {
            outcomes.refused++
            if (stopping !== undefined) return outcomes
            continue
          }
          if (outcome.error !== undefined || outcome.status !== 200) {
            outcomes.failed.push(outcome.error ?? `status ${outcome.status}`)
            if (stopping !== undefined) return outcomes
            continue
          }
          outcomes.answered++
          if (outcome.connection === "close") outcomes.closing++
        }
      } finally {
        agent.destroy()
      }
    }
    const clients = Array.from({ length: 8 }, loop)
    // Let every client make requests on its kept connection, then stop the server under them.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    stopping = server.close()
    const results = await Promise.all(clients)
    await stopping
    expect(results.flatMap(({ failed }) => failed)).toEqual([])
    for (const result of results) {
      expect(result.answered).toBeGreaterThan(1)
      // Its last answer said the connection closes; the next connect was refused (the listener closed).
      expect(result.closing).toBe(1)
      expect(result.refused).toBe(1)
    }
  }, 60_000)
})
