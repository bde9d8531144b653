/**
 * An answer that stops moving is cut off (`KASSA_SEND_TIMEOUT`, Node's `server.timeout`): a client that asks for a
 * large answer and stops reading would otherwise hold its connection, and everything queued for it, for good. Here a
 * CSV export of several megabytes (more than loopback's socket buffers hold) is asked for over a raw socket that then
 * reads nothing for a while; when it reads again it gets part of the file and the end of the connection, not the
 * rest of the file — and the server goes on answering others.
 */
import { connect } from "node:net"
import { Duration } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import { expr, paymentsInsert, seedPayments } from "./support/PaymentSeed.ts"
import { databases, type RunningServer, startServer, testPasswordCost } from "./support/TestServer.ts"

/** Payments in the export, each row ~570 bytes: ~17 MB, far more than a stalled loopback connection takes in. */
const rows = 30_000

describe.each(databases)("a client that stops reading on %s", (database) => {
  let server: RunningServer
  let admin: DashboardClient
  let applicationId: string
  beforeAll(async () => {
    server = await startServer(database, { sendTimeout: Duration.seconds(1) }, { passwordCost: testPasswordCost })
    const shop = await server.createApplication({ name: "A shop with a long name ".repeat(8) })
    applicationId = shop.application.id
    await seedPayments(
      server,
      paymentsInsert(
        { application_id: shop.application.id, order_reference: expr("'order-' || i || '-' || repeat('x', 200)") },
        `generate_series(1, ${rows}) i`
      )
    )
    admin = await DashboardClient.signIn(server, await createUser(server, { operatorAdmin: true }))
  }, 60_000)
  afterAll(() => server.close())

  it("has its connection closed once the answer stops moving, and the server goes on", async () => {
    const { hostname, port } = new URL(server.baseUrl)
    const socket = connect({ host: hostname, port: Number(port) })
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()))
    socket.once("error", () => {})
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()))
    socket.write(
      `GET /dashboard/apps/${applicationId}/payments.csv HTTP/1.1\r\nHost: ${hostname}\r\n` +
        `Cookie: ${admin.cookieHeader()}\r\n\r\n`
    )
    // Reads nothing for three send timeouts: the server's writes fill the socket's buffers and stop moving.
    socket.pause()
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    socket.resume()
    // What was already in the buffers arrives, then the end of the connection; a bound on the wait, not a sleep.
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 10_000))])
    const received = Buffer.concat(chunks).toString("utf8")
    expect(socket.destroyed || socket.readableEnded, `closed after ${received.length} bytes`).toBe(true)
    expect(received.startsWith("HTTP/1.1 200")).toBe(true)
    // Cut off: not the whole file (its last chunk never came), though the export had started.
    expect(received).toContain("order-")
    expect(received.endsWith("\r\n0\r\n\r\n")).toBe(false)
    expect(received.split("\r\n").filter((line) => line.includes(",order-")).length).toBeLessThan(rows)
    socket.destroy()

    // Everyone else is answered as before.
    expect((await admin.get("/dashboard/operator")).status).toBe(200)
  }, 30_000)
})
