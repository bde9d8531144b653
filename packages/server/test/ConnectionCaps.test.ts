/**
 * Connection caps (issue 23, http/ConnectionLimits): 20,000 idle connections from one client once took every file
 * descriptor of a process, silently. Over real sockets on Linux loopback (the whole 127/8 answers, so a test can be
 * several clients with `localAddress`):
 * - past `KASSA_MAX_CONNECTIONS_PER_ADDRESS` a connection from that address is closed at once; the ones held stay
 *   open, another address (`/livez` from 127.0.0.1) is served, and a held one closed frees a place;
 * - a trusted proxy (`KASSA_TRUSTED_PROXIES`) is not held to the per-address cap: every client is behind it;
 * - past `KASSA_MAX_CONNECTIONS` (Node's `maxConnections`) any new connection is closed at once, and served again once
 *   connections close;
 * - each refusal is counted in `kassa_http_connections_refused_total{reason}` and logged at most once per window,
 *   with the count since the last line;
 * - an accept that fails for want of descriptors (EMFILE, ENFILE) is logged as an error, not thrown;
 * - the settings: `auto` is half the open-file limit (at most 8,192), 256 per address by default, 0 refused.
 * PGlite only: nothing here touches the database.
 */
import { connect, createServer, type Socket } from "node:net"
import { ConfigProvider, Effect, Exit, Logger, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as IpAllowList from "../src/auth/IpAllowList.ts"
import { autoMaxConnections, openFileLimit, ServerConfig } from "../src/config/ServerConfig.ts"
import * as ConnectionLimits from "../src/http/ConnectionLimits.ts"
import { eventually } from "./support/Eventually.ts"
import { freePort, type RunningServer, startServer } from "./support/TestServer.ts"

/** Log lines the server writes (level and message). */
const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    lines.push(`${logLevel} ${(Array.isArray(message) ? message : [message]).map(String).join(" ")}`)
  })
  return { lines, logger }
}

interface Held {
  readonly socket: Socket
  /** Resolves when the server closes it (never, for one it keeps). */
  readonly closed: Promise<void>
}

/** An idle connection from `localAddress`, once connected. */
const hold = (port: number, localAddress: string) =>
  new Promise<Held>((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, localAddress })
    // A refused one is reset or ended by the server: either is the close this test waits for.
    socket.on("error", () => {})
    const closed = new Promise<void>((done) => socket.once("close", () => done()))
    socket.once("connect", () => resolve({ socket, closed }))
    socket.once("error", reject)
  })

const holdMany = (port: number, localAddress: string, count: number) =>
  Promise.all(Array.from({ length: count }, () => hold(port, localAddress)))

/** Whether `held` is closed within `millis`. */
const closedWithin = (held: Held, millis: number) =>
  Promise.race([held.closed.then(() => true), new Promise<boolean>((done) => setTimeout(() => done(false), millis))])

const refusedCount = async (metricsPort: number, reason: string) => {
  const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((response) => response.text())
  const line = text
    .split("\n")
    .find((entry) => entry.startsWith("kassa_http_connections_refused_total{") && entry.includes(`reason="${reason}"`))
  return line === undefined ? 0 : Number(line.split(" ").at(-1))
}

const refusalLines = (lines: ReadonlyArray<string>) => lines.filter((line) => line.includes("client connection(s)"))

describe("the per-address cap", () => {
  const cap = 40
  const logs = captureLogs()
  let server: RunningServer
  let port = 0
  let metricsPort = 0
  const opened: Array<Held> = []

  beforeAll(async () => {
    metricsPort = await freePort()
    server = await startServer(
      "pglite",
      {
        maxConnectionsPerAddress: cap,
        trustedProxies: ["127.0.0.4"],
        metricsPort: Option.some(metricsPort)
      },
      { logger: logs.logger }
    )
    port = Number(new URL(server.baseUrl).port)
  })
  afterAll(async () => {
    for (const held of opened) held.socket.destroy()
    await server.close()
  })

  it("closes an address's connections past the cap at once, keeps the rest, and serves other addresses", async () => {
    const before = await refusedCount(metricsPort, "max_connections_per_address")
    const kept = await holdMany(port, "127.0.0.2", cap)
    opened.push(...kept)
    const over = await holdMany(port, "127.0.0.2", 10)
    opened.push(...over)
    expect(await Promise.all(over.map((held) => closedWithin(held, 2000)))).toEqual(Array(10).fill(true))
    // The ones within the cap stay open (idle; the receive timeout is 30 s).
    expect(await Promise.all(kept.map((held) => closedWithin(held, 200)))).toEqual(Array(cap).fill(false))
    // Another client is served meanwhile.
    const livez = await fetch(`${server.baseUrl}/livez`)
    expect(livez.status).toBe(200)
    // A held connection still serves requests.
    const first = kept[0]
    if (first === undefined) throw new Error("no connection held")
    const answer = new Promise<string>((resolve) =>
      first.socket.once("data", (chunk: Buffer) => resolve(chunk.toString()))
    )
    first.socket.write("GET /livez HTTP/1.1\r\nHost: kassa\r\n\r\n")
    expect(await answer).toMatch(/^HTTP\/1\.1 200/)
    expect((await refusedCount(metricsPort, "max_connections_per_address")) - before).toBe(10)

    // One line at the first refusal, with the setting, its value and the address; the other nine wait for the window.
    const lines = refusalLines(logs.lines)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain("Warn refused 1 client connection(s): 1 over KASSA_MAX_CONNECTIONS_PER_ADDRESS (40)")
    await eventually(async () => refusalLines(logs.lines).length === 2, "the window's line with the rest counted", 10)
    expect(refusalLines(logs.lines)[1]).toContain(
      "refused 9 client connection(s): 9 over KASSA_MAX_CONNECTIONS_PER_ADDRESS (40)"
    )
  }, 30_000)

  it("a held connection closed frees its place", async () => {
    const first = opened.shift()
    if (first === undefined) throw new Error("no connection held")
    first.socket.destroy()
    await first.closed
    // The server counts the close when its side sees it: the next connection is kept once it has.
    await eventually(
      async () => {
        const next = await hold(port, "127.0.0.2")
        opened.push(next)
        return !(await closedWithin(next, 300))
      },
      "a place again",
      5
    )
  })

  it("a trusted proxy is held to the process's cap only", async () => {
    const proxied = await holdMany(port, "127.0.0.4", cap + 10)
    opened.push(...proxied)
    expect(await Promise.all(proxied.map((held) => closedWithin(held, 300)))).toEqual(Array(cap + 10).fill(false))
  })
})

describe("the process's cap", () => {
  const cap = 30
  const logs = captureLogs()
  let server: RunningServer
  let port = 0
  let metricsPort = 0

  beforeAll(async () => {
    metricsPort = await freePort()
    server = await startServer(
      "pglite",
      { maxConnections: cap, metricsPort: Option.some(metricsPort) },
      { logger: logs.logger }
    )
    port = Number(new URL(server.baseUrl).port)
  })
  afterAll(() => server.close())

  it("closes every connection past it at once, logs and counts it, and serves again once connections close", async () => {
    const before = await refusedCount(metricsPort, "max_connections")
    const kept = await holdMany(port, "127.0.0.3", cap)
    const over = await holdMany(port, "127.0.0.5", 5)
    expect(await Promise.all(over.map((held) => closedWithin(held, 2000)))).toEqual(Array(5).fill(true))
    expect(await Promise.all(kept.map((held) => closedWithin(held, 200)))).toEqual(Array(cap).fill(false))
    expect((await refusedCount(metricsPort, "max_connections")) - before).toBe(5)
    expect(refusalLines(logs.lines)[0]).toContain("over KASSA_MAX_CONNECTIONS (30)")
    for (const held of kept) held.socket.destroy()
    await eventually(
      async () => (await fetch(`${server.baseUrl}/livez`).catch(() => undefined))?.status === 200,
      "/livez served again",
      5
    )
  }, 30_000)
})

describe("a failed accept", () => {
  it("(EMFILE) is logged as an error with the code; what its window counted is logged at the listener's close", async () => {
    const logs = captureLogs()
    const context = await Effect.runPromise(Effect.context<never>().pipe(Effect.provide(Logger.layer([logs.logger]))))
    const server = createServer()
    ConnectionLimits.attach(server, { maxConnections: 10, maxConnectionsPerAddress: 5, trustedProxies: [] }, context, {
      windowMs: 60_000
    })
    const emfile = () => Object.assign(new Error("accept EMFILE"), { code: "EMFILE", errno: -24, syscall: "accept" })
    // Node emits these on the server; without a listener each would be thrown out of the event loop.
    for (let index = 0; index < 3; index++) server.emit("error", emfile())
    await eventually(() => refusalLines(logs.lines).length === 1, "the first line", 5)
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(refusalLines(logs.lines)).toHaveLength(1)
    server.close()
    await eventually(() => refusalLines(logs.lines).length === 2, "the window's line at close", 5)
    expect(refusalLines(logs.lines)).toEqual([
      "Error refused 1 client connection(s): 1 failed accept(s) (EMFILE: the process is out of file descriptors)",
      "Error refused 2 client connection(s): 2 failed accept(s) (EMFILE: the process is out of file descriptors)"
    ])
  })

  it("groups IPv6 peers by their /64, IPv4 peers by address", () => {
    const key = (text: string) => ConnectionLimits.addressKey(Option.getOrThrow(IpAllowList.parseAddress(text)))
    expect(key("2001:db8:1:2:aaaa::1")).toBe(key("2001:db8:1:2:bbbb::9"))
    expect(key("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64")
    expect(key("2001:db8:1:3::1")).not.toBe(key("2001:db8:1:2::1"))
    expect(key("::ffff:127.0.0.2")).toBe("127.0.0.2")
    expect(key("127.0.0.3")).not.toBe(key("127.0.0.2"))
  })
})

/** The two settings as a start reads them from `env`, or the failure's text. */
const load = (env: Record<string, string>) =>
  Effect.runPromiseExit(
    Effect.gen(function* () {
      const settings = yield* ServerConfig
      return { max: settings.maxConnections, perAddress: settings.maxConnectionsPerAddress }
    }).pipe(Effect.provide(ServerConfig.layer), Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))))
  ).then((exit) => (Exit.isSuccess(exit) ? exit.value : String(exit.cause)))

describe("KASSA_MAX_CONNECTIONS and KASSA_MAX_CONNECTIONS_PER_ADDRESS", () => {
  it("default to half the open-file limit (at most 8,192) and 256 per address", async () => {
    const limit = openFileLimit()
    // This test runs on Linux, where the limit is read from /proc.
    expect(Option.isSome(limit)).toBe(true)
    expect(await load({})).toEqual({ max: autoMaxConnections(limit), perAddress: 256 })
    expect(await load({ KASSA_MAX_CONNECTIONS: "auto" })).toEqual({ max: autoMaxConnections(limit), perAddress: 256 })
    expect([1024, 10_000, 20_000, 1_048_576].map((files) => autoMaxConnections(Option.some(files)))).toEqual([
      512, 5000, 8192, 8192
    ])
    expect(autoMaxConnections(Option.some(40))).toBe(64)
    expect(autoMaxConnections(Option.none())).toBe(4096)
  })

  it("read whole numbers; 0, a fraction and a word are refused naming the setting", async () => {
    expect(await load({ KASSA_MAX_CONNECTIONS: "2000", KASSA_MAX_CONNECTIONS_PER_ADDRESS: "50" })).toEqual({
      max: 2000,
      perAddress: 50
    })
    for (const bad of ["0", "1.5", "many"]) {
      expect(await load({ KASSA_MAX_CONNECTIONS: bad })).toContain("KASSA_MAX_CONNECTIONS must be a whole number")
    }
    for (const bad of ["0", "-1"]) {
      expect(await load({ KASSA_MAX_CONNECTIONS_PER_ADDRESS: bad })).toContain(
        "KASSA_MAX_CONNECTIONS_PER_ADDRESS must be a whole number"
      )
    }
  })
})
