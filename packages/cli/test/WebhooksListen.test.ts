/** `kassa webhooks listen`: verifies and prints signed POSTs, answers 200/400, forwards untouched with --forward-to. */
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { sign } from "@kassa/webhook-verify"
import { afterAll, describe, expect, it } from "vitest"
import { kassa, killLeftovers, start } from "./support.ts"

const secret = "whsec_listenlistenlistenlistenlist12"
const body = `{"id":"evt_5d2f","event":"payment.refunded","created_at":"2026-01-01T00:00:00.000Z","data":{"id":"9a8b7c6d-0000-4000-8000-000000000001","status":"refunded","note":"caf\u00e9 \u2713"}}`

afterAll(killLeftovers)

const post = async (url: string, payload: string | Uint8Array<ArrayBuffer>, headers: Record<string, string>) => {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-service-event": "payment.refunded", ...headers },
    body: payload
  })
  return { status: response.status, text: await response.text() }
}

describe.concurrent("kassa webhooks listen", () => {
  it("verifies and prints each delivery: 200 for a valid signature, 400 with the reason otherwise", async () => {
    const listener = start(["webhooks", "listen", "--port", "0"], { KASSA_WEBHOOK_SECRET: secret })
    try {
      const [, url = ""] = await listener.waitFor(/Listening on (http:\/\/\S+) /)
      const valid = await post(`${url}/webhooks`, body, { "x-service-signature": await sign(body, secret) })
      expect(valid.status).toBe(200)
      await listener.waitFor(
        /payment\.refunded\s+evt_5d2f\s+payment 9a8b7c6d-0000-4000-8000-000000000001 \(refunded\)\s+valid signature/
      )

      const wrong = await post(`${url}/webhooks`, body, { "x-service-signature": await sign(body, "whsec_other") })
      expect(wrong.status).toBe(400)
      expect(wrong.text).toContain("no_matching_signature")
      const missing = await post(`${url}/webhooks`, body, {})
      expect(missing.status).toBe(400)
      expect(missing.text).toContain("missing_header")
      await listener.waitFor(/INVALID \(no_matching_signature\)/)
      await listener.waitFor(/INVALID \(missing_header\)/)
    } finally {
      expect(await listener.stop()).toBe(0)
    }
  })

  it("--json prints one object per delivery", async () => {
    const listener = start(["webhooks", "listen", "--port", "0", "--json", "--secret", secret])
    try {
      const [, url = ""] = await listener.waitFor(/"listening":"(http:\/\/[^"]+)"/)
      const old = await sign(body, secret, { timestamp: Math.floor(Date.now() / 1000) - 600 })
      expect((await post(url, body, { "x-service-signature": old })).status).toBe(400)
      const [line = ""] = await listener.waitFor(/^\{"received_at".*$/m)
      expect(JSON.parse(line)).toMatchObject({
        method: "POST",
        valid: false,
        reason: "timestamp_outside_tolerance",
        skew_seconds: expect.any(Number)
      })
    } finally {
      expect(await listener.stop()).toBe(0)
    }
  })

  it("--forward-to passes the body bytes and signature headers on untouched and relays the answer", async () => {
    const seen: Array<{
      body: Buffer
      headers: IncomingHttpHeaders
      method: string | undefined
      url: string | undefined
    }> = []
    const app = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        seen.push({ body: Buffer.concat(chunks), headers: request.headers, method: request.method, url: request.url })
        response.writeHead(201, { "content-type": "text/plain" }).end("stored")
      })
    })
    await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve))
    const target = `http://127.0.0.1:${(app.address() as AddressInfo).port}/kassa/webhooks`
    const listener = start(["webhooks", "listen", "--port", "0", "--forward-to", target], {
      KASSA_WEBHOOK_SECRET: secret
    })
    try {
      const [, url = ""] = await listener.waitFor(/Listening on (http:\/\/\S+) /)
      const bytes = new TextEncoder().encode(body)
      const signature = await sign(bytes, secret)
      const answer = await post(url, bytes, { "x-service-signature": signature, "user-agent": "Kassa-Webhooks/1.0" })
      expect(answer).toEqual({ status: 201, text: "stored" })
      expect(seen).toHaveLength(1)
      const [forwarded] = seen
      expect(forwarded?.method).toBe("POST")
      expect(forwarded?.url).toBe("/kassa/webhooks")
      expect(Buffer.compare(forwarded?.body ?? Buffer.alloc(0), Buffer.from(bytes))).toBe(0)
      expect(forwarded?.headers["x-service-signature"]).toBe(signature)
      expect(forwarded?.headers["x-service-event"]).toBe("payment.refunded")
      expect(forwarded?.headers["content-type"]).toBe("application/json")
      expect(forwarded?.headers["user-agent"]).toBe("Kassa-Webhooks/1.0")
      await listener.waitFor(/valid signature\s+-> http:\/\/127\.0\.0\.1:\d+\/kassa\/webhooks: HTTP 201/)
    } finally {
      expect(await listener.stop()).toBe(0)
      await new Promise((resolve) => app.close(resolve))
    }
  })

  it("usage errors: no secret, a malformed port or forward URL (exit 2)", async () => {
    const noSecret = await kassa(["webhooks", "listen", "--port", "0"])
    expect(noSecret.code).toBe(2)
    const badPort = await kassa(["webhooks", "listen", "--port", "x", "--secret", secret])
    expect(badPort.code).toBe(2)
    const badUrl = await kassa(["webhooks", "listen", "--forward-to", "nowhere", "--secret", secret])
    expect(badUrl.code).toBe(2)
  })
})
