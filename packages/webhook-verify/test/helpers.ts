import { once } from "node:events"
import { readFileSync } from "node:fs"
import type { AddressInfo, Server } from "node:net"
import type { KassaEvent } from "@kassa/webhook-verify"

export interface Vector {
  readonly name: string
  readonly secrets: readonly [string, ...Array<string>]
  readonly timestamp: number
  readonly body: string
  readonly header: string
}

const isVector = (value: unknown): value is Vector => {
  if (typeof value !== "object" || value === null) return false
  const v = value as Record<string, unknown>
  return (
    typeof v.name === "string" &&
    Array.isArray(v.secrets) &&
    v.secrets.length > 0 &&
    v.secrets.every((secret) => typeof secret === "string") &&
    Number.isSafeInteger(v.timestamp) &&
    typeof v.body === "string" &&
    typeof v.header === "string"
  )
}

const loadVectors = (): ReadonlyArray<Vector> => {
  const fixture: unknown = JSON.parse(readFileSync(new URL("fixtures/vectors.json", import.meta.url), "utf8"))
  const list = typeof fixture === "object" && fixture !== null ? (fixture as { vectors?: unknown }).vectors : undefined
  if (!Array.isArray(list) || list.length === 0 || !list.every(isVector)) {
    throw new Error(
      "test/fixtures/vectors.json does not hold { vectors: [{ name, secrets, timestamp, body, header }] }"
    )
  }
  return list
}

export const vectors = loadVectors()

const firstVector = (): Vector => {
  const [first] = vectors
  if (first === undefined) throw new Error("no vectors")
  return first
}

/** A complete `payment.paid` event, as in the first vector. */
export const paidEvent = JSON.parse(firstVector().body) as KassaEvent

export const secret = "whsec_3qVb8kR2mT7xZp4LwN9sYc6HdF1gJ5uA"
export const otherSecret = "whsec_Xe7Kp2Wm9Qa4Rt6Ys1Lb8Nc3Vd5Hf0Gj"

/** Unix seconds now. */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000)

/** Waits until the server listens and returns its base URL. */
export const baseUrl = async (server: Server): Promise<string> => {
  if (!server.listening) await once(server, "listening")
  const address = server.address() as AddressInfo
  return `http://127.0.0.1:${address.port}`
}

export const closeServer = (server: Server): Promise<void> =>
  new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())))

/** Runs `f` and returns the error it throws, failing when it does not throw. */
export const rejection = async (f: () => Promise<unknown>): Promise<unknown> => {
  try {
    await f()
  } catch (error) {
    return error
  }
  throw new Error("expected a rejection")
}
