// Each README recipe runs on a real server on an ephemeral port and receives
// signed deliveries over HTTP.
import { serve } from "@hono/node-server"
import { type KassaEvent, signedRequest, verify, WebhookVerificationError } from "@kassa/webhook-verify"
import express from "express"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { baseUrl, closeServer, nowSeconds, paidEvent } from "./helpers.ts"
import { received, webhookSecret } from "./recipes/app.ts"
import { app as expressApp } from "./recipes/express.ts"
import { app as fastifyApp } from "./recipes/fastify.ts"
import { app as honoApp } from "./recipes/hono.ts"
import { POST } from "./recipes/next-route.ts"
import { server as nodeServer } from "./recipes/node-http.ts"

interface Running {
  readonly url: string
  readonly close: () => Promise<void>
}

const recipes: ReadonlyArray<readonly [string, () => Promise<Running>]> = [
  [
    "node:http",
    async () => {
      nodeServer.listen(0, "127.0.0.1")
      return { url: await baseUrl(nodeServer), close: () => closeServer(nodeServer) }
    }
  ],
  [
    "Express",
    async () => {
      const server = expressApp.listen(0, "127.0.0.1")
      return { url: await baseUrl(server), close: () => closeServer(server) }
    }
  ],
  [
    "Fastify",
    async () => ({ url: await fastifyApp.listen({ port: 0, host: "127.0.0.1" }), close: () => fastifyApp.close() })
  ],
  [
    "Hono on @hono/node-server",
    async () => {
      const server = serve({ fetch: honoApp.fetch, port: 0, hostname: "127.0.0.1" })
      return { url: await baseUrl(server), close: () => closeServer(server) }
    }
  ],
  [
    "Next.js route handler (Web Request)",
    async () => {
      // @hono/node-server turns each Node.js request into a real Web Request.
      const server = serve({ fetch: POST, port: 0, hostname: "127.0.0.1" })
      return { url: await baseUrl(server), close: () => closeServer(server) }
    }
  ]
]

const post = async (url: string, init: { headers: Readonly<Record<string, string>>; body: string }) => {
  const response = await fetch(`${url}/webhooks/kassa`, { method: "POST", ...init })
  return { status: response.status, text: await response.text() }
}

const refunded: KassaEvent = { ...paidEvent, id: "evt_00000000-0000-4000-8000-000000000001", event: "payment.refunded" }

beforeEach(() => {
  received.length = 0
})

describe.each(recipes)("%s recipe", (_, start) => {
  let running: Running
  beforeAll(async () => {
    running = await start()
  })
  afterAll(() => running.close())

  it("accepts a signed delivery and hands the event over", async () => {
    const response = await post(running.url, await signedRequest(refunded, webhookSecret))
    expect(response.status).toBe(200)
    expect(received).toEqual([refunded])
  })

  it("accepts a delivery during a secret rotation (two v1, new first)", async () => {
    const response = await post(running.url, await signedRequest(paidEvent, ["whsec_NewSecret", webhookSecret]))
    expect(response.status).toBe(200)
    expect(received.map((event) => event.id)).toEqual([paidEvent.id])
  })

  it("rejects a tampered body with 400 and the reason", async () => {
    const init = await signedRequest(paidEvent, webhookSecret)
    const response = await post(running.url, { ...init, body: init.body.replace('"amount":12500', '"amount":1') })
    expect(response.status).toBe(400)
    expect(response.text).toMatch(/^no_matching_signature: /)
    expect(received).toEqual([])
  })

  it("rejects a delivery signed with another secret", async () => {
    const response = await post(running.url, await signedRequest(paidEvent, "whsec_SomebodyElse"))
    expect(response.status).toBe(400)
    expect(response.text).toMatch(/^no_matching_signature: /)
  })

  it("rejects a delivery without signature", async () => {
    const { "X-Service-Signature": _signature, ...headers } = (await signedRequest(paidEvent, webhookSecret)).headers
    const response = await post(running.url, { headers, body: JSON.stringify(paidEvent) })
    expect(response.status).toBe(400)
    expect(response.text).toMatch(/^missing_header: /)
  })

  it("rejects a replay older than five minutes", async () => {
    const response = await post(
      running.url,
      await signedRequest(paidEvent, webhookSecret, { timestamp: nowSeconds() - 301 })
    )
    expect(response.status).toBe(400)
    expect(response.text).toMatch(/^timestamp_outside_tolerance: /)
  })
})

describe("Express recipe", () => {
  it("handles a redelivered event once", async () => {
    const server = expressApp.listen(0, "127.0.0.1")
    try {
      const url = await baseUrl(server)
      const event: KassaEvent = { ...paidEvent, id: "evt_00000000-0000-4000-8000-000000000002" }
      const first = await post(url, await signedRequest(event, webhookSecret))
      const retry = await post(url, await signedRequest(event, webhookSecret))
      expect([first.status, retry.status]).toEqual([200, 200])
      expect(received.map((handled) => handled.id)).toEqual([event.id])
    } finally {
      await closeServer(server)
    }
  })

  it("with express.json() the body arrives parsed, and verify says how to fix it", async () => {
    const app = express()
    app.use(express.json())
    app.post("/webhooks/kassa", async (req, res) => {
      try {
        await verify(req.body, req.headers["x-service-signature"], webhookSecret)
        res.sendStatus(200)
      } catch (error) {
        if (!(error instanceof WebhookVerificationError)) throw error
        res.status(400).type("text/plain").send(error.message)
      }
    })
    const server = app.listen(0, "127.0.0.1")
    try {
      const response = await post(await baseUrl(server), await signedRequest(paidEvent, webhookSecret))
      expect(response.status).toBe(400)
      expect(response.text).toMatch(/^body_already_parsed: the body was parsed before verification/)
      expect(response.text).toContain("express.raw({ type: 'application/json' })")
    } finally {
      await closeServer(server)
    }
  })
})

describe("Next.js recipe called directly", () => {
  it("verifies a Request built in-process", async () => {
    const response = await POST(
      new Request("http://localhost/webhooks/kassa", await signedRequest(paidEvent, webhookSecret))
    )
    expect(response.status).toBe(200)
    expect(received).toEqual([paidEvent])
  })
})
