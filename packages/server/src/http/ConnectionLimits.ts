/**
 * Connection caps (issue 23): 20,000 idle connections from one client took every file descriptor of a process —
 * `/livez` and creates could not connect, nothing was logged — until the receive timeout freed them 30 s later.
 *
 * - `KASSA_MAX_CONNECTIONS` is Node's `server.maxConnections`: past it Node closes a new connection before it makes a
 *   socket of it (its `drop` event). The default leaves half the process's descriptors to what the server opens
 *   itself (ServerConfig.autoMaxConnections), so the database pool and webhook calls always find one.
 * - `KASSA_MAX_CONNECTIONS_PER_ADDRESS`: one peer address's open connections; past it a new one is destroyed at once,
 *   so one client cannot take the whole of the first cap from everyone else. The peer is the TCP peer, never
 *   `X-Forwarded-For`: a socket is counted before any request on it is read. IPv6 peers count per /64, the block one
 *   host is usually given (per /128 it could take a new address per connection). A trusted proxy
 *   (`KASSA_TRUSTED_PROXIES`) carries every client behind it, so only the first cap bounds it.
 * - An accept that fails (EMFILE, ENFILE: out of descriptors anyway) is reported instead of passing unseen.
 *
 * Each refusal is counted (`kassa_http_connections_refused_total{reason}`) and logged at most once per window, with
 * the counts since the last line: a flood writes one line every few seconds, not one per connection.
 */
import type { Server, Socket } from "node:net"
import { type Context, Effect, Option } from "effect"
import { NetAddress } from "effect/net"
import * as IpAllowList from "../auth/IpAllowList.ts"
import * as Metrics from "../observability/Metrics.ts"

export interface Limits {
  readonly maxConnections: number
  readonly maxConnectionsPerAddress: number
  /** `KASSA_TRUSTED_PROXIES` as written (an invalid entry stops the start in ClientAddress). */
  readonly trustedProxies: ReadonlyArray<string>
}

/** At most one log line about refused connections per this many milliseconds. */
export const reportWindowMs = 5000

const settingOf: Record<Metrics.ConnectionRefusal, string> = {
  max_connections: "KASSA_MAX_CONNECTIONS",
  max_connections_per_address: "KASSA_MAX_CONNECTIONS_PER_ADDRESS",
  accept_error: "accept"
}

/** What one peer's connections are counted under: the address, or for IPv6 its /64. */
export const addressKey = (address: NetAddress.IpAddress): string => {
  if (NetAddress.isIpv4Address(address)) return NetAddress.formatIp(address)
  const [a = 0, b = 0, c = 0, d = 0] = NetAddress.ipv6ToSegments(address)
  return `${[a, b, c, d].map((segment) => segment.toString(16)).join(":")}::/64`
}

/**
 * Counts each refusal and logs, through the server's logger (JSON lines in production), the first one at once and
 * the rest once the window has passed, as counts by reason with the last address or error seen.
 */
const refusalReporter = (context: Context.Context<never>, limits: Limits, windowMs: number) => {
  let counts: Partial<Record<Metrics.ConnectionRefusal, number>> = {}
  let lastAddress: string | undefined
  let lastError: string | undefined
  let window: ReturnType<typeof setTimeout> | undefined
  const flush = () => {
    window = undefined
    const entries = Object.entries(counts) as Array<[Metrics.ConnectionRefusal, number]>
    if (entries.length === 0) return
    const total = entries.reduce((sum, [, count]) => sum + count, 0)
    const parts = entries.map(([reason, count]) =>
      reason === "accept_error"
        ? `${count} failed accept(s) (${lastError ?? "error"}: the process is out of file descriptors)`
        : `${count} over ${settingOf[reason]} (${reason === "max_connections" ? limits.maxConnections : limits.maxConnectionsPerAddress})`
    )
    const message = `refused ${total} client connection(s): ${parts.join(", ")}`
    const annotations = {
      refused: Object.fromEntries(entries),
      ...(lastAddress === undefined ? {} : { address: lastAddress }),
      ...(lastError === undefined ? {} : { error: lastError })
    }
    const log = counts.accept_error === undefined ? Effect.logWarning(message) : Effect.logError(message)
    Effect.runForkWith(context)(Effect.annotateLogs(log, annotations))
    counts = {}
    lastAddress = undefined
    lastError = undefined
    // The window stays open after a line: refusals inside it wait for its end.
    window = setTimeout(flush, windowMs)
    window.unref()
  }
  return {
    refuse: (reason: Metrics.ConnectionRefusal, detail: { address?: string; error?: string } = {}) => {
      Metrics.recordConnectionRefusedUnsafe(context, reason)
      counts[reason] = (counts[reason] ?? 0) + 1
      if (detail.address !== undefined) lastAddress = detail.address
      if (detail.error !== undefined) lastError = detail.error
      if (window === undefined) flush()
    },
    /** At the listener's close: what the open window counted is logged now, not lost. */
    stop: () => {
      if (window !== undefined) clearTimeout(window)
      flush()
      if (window !== undefined) clearTimeout(window)
    }
  }
}

/**
 * Puts the caps on `server` (before it listens). `context` carries the logger and metrics registry the refusals are
 * reported to.
 */
export const attach = (
  server: Server,
  limits: Limits,
  context: Context.Context<never>,
  options: { readonly windowMs?: number } = {}
) => {
  server.maxConnections = limits.maxConnections
  const reporter = refusalReporter(context, limits, options.windowMs ?? reportWindowMs)
  const trusted = IpAllowList.parseRanges(limits.trustedProxies)
  const open = new Map<string, number>()
  server.on("connection", (socket: Socket) => {
    const peer = IpAllowList.parseAddress(socket.remoteAddress ?? "")
    // No address: the peer is already gone (Node reports none for a socket closed before this ran).
    if (Option.isNone(peer) || IpAllowList.contains(trusted, peer.value)) return
    const key = addressKey(peer.value)
    const count = (open.get(key) ?? 0) + 1
    if (count > limits.maxConnectionsPerAddress) {
      socket.destroy()
      reporter.refuse("max_connections_per_address", { address: key })
      return
    }
    open.set(key, count)
    socket.once("close", () => {
      const left = (open.get(key) ?? 1) - 1
      if (left <= 0) open.delete(key)
      else open.set(key, left)
    })
  })
  server.on("drop", (data?: { readonly remoteAddress?: string }) => {
    reporter.refuse("max_connections", data?.remoteAddress === undefined ? {} : { address: data.remoteAddress })
  })
  // Node emits accept failures on the server; with no listener after `listen` one would be thrown. A failed `listen`
  // is the start's to report (ListenError), not this listener's.
  server.on("error", (error: NodeJS.ErrnoException) => {
    if (error.syscall === "accept") reporter.refuse("accept_error", { error: error.code ?? error.message })
    else if (server.listening) Effect.runForkWith(context)(Effect.logError("HTTP server error", error))
  })
  server.once("close", reporter.stop)
}
