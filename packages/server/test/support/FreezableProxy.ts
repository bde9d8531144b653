/**
 * A TCP proxy a test can freeze: frozen, it stops forwarding in both directions without closing anything — a
 * database that is silent rather than refusing (a stalled host, a partitioned network). New connections are
 * accepted and held. Thawed, everything held flows on. Cut, it drops and refuses connections: a service that is down.
 */
import { connect, createServer, type Socket } from "node:net"

export interface FreezableProxy {
  readonly port: number
  readonly freeze: () => void
  readonly thaw: () => void
  /** Drops every connection and refuses (resets) new ones until {@link restore}: a service that went down. */
  readonly cut: () => void
  readonly restore: () => void
  readonly close: () => Promise<void>
}

export const startFreezableProxy = async (target: { readonly host: string; readonly port: number }) => {
  let frozen = false
  let down = false
  const sockets = new Set<Socket>()
  const pending: Array<() => void> = []

  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.once("close", () => sockets.delete(socket))
    if (frozen) socket.pause()
  }
  const forward = (from: Socket, to: Socket) => {
    from.on("data", (chunk: Buffer) => to.write(chunk))
    from.once("end", () => to.end())
    from.once("close", () => to.destroy())
    from.on("error", () => to.destroy())
  }

  const server = createServer((client) => {
    if (down) {
      client.resetAndDestroy()
      return
    }
    track(client)
    const open = () => {
      const upstream = connect(target)
      track(upstream)
      forward(client, upstream)
      forward(upstream, client)
    }
    if (frozen) pending.push(open)
    else open()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("the proxy has no TCP address")

  return {
    port: address.port,
    freeze: () => {
      frozen = true
      for (const socket of sockets) socket.pause()
    },
    thaw: () => {
      frozen = false
      for (const socket of sockets) socket.resume()
      for (const open of pending.splice(0)) open()
    },
    cut: () => {
      down = true
      for (const socket of sockets) socket.resetAndDestroy()
    },
    restore: () => {
      down = false
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  } satisfies FreezableProxy
}
