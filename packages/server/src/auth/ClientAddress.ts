/**
 * The address a request comes from (decisions §5): the socket peer, or, when the peer is one of
 * `KASSA_TRUSTED_PROXIES`, the right-most `X-Forwarded-For` address that is not a trusted proxy. Only the
 * proxies' own entries are believed: anything left of the first untrusted hop was written by the client.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import { NetAddress } from "effect/net"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as IpAllowList from "./IpAllowList.ts"

// Proxies that add ports or brackets (`203.0.113.7:4711`, `[2001:db8::1]:443`) still name an address.
const forwardedAddress = (entry: string): Option.Option<NetAddress.IpAddress> => {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(entry)
  if (bracketed?.[1] !== undefined) return IpAllowList.parseAddress(bracketed[1])
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(entry)
  return IpAllowList.parseAddress(withPort?.[1] ?? entry)
}

/**
 * The client address of a request, given its socket peer and `X-Forwarded-For` header. None when it cannot be
 * told, e.g. the right-most untrusted `X-Forwarded-For` entry is not an address: the allow-list then fails closed.
 */
export const resolve = (options: {
  readonly peer: Option.Option<string>
  readonly forwardedFor: string | undefined
  readonly trustedProxies: IpAllowList.IpRanges
}): Option.Option<NetAddress.IpAddress> => {
  const peer = Option.flatMap(options.peer, IpAllowList.parseAddress)
  if (Option.isNone(peer) || !IpAllowList.contains(options.trustedProxies, peer.value)) return peer
  const hops = (options.forwardedFor ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0)
  // A trusted proxy that forwarded nothing is itself the client.
  let client: Option.Option<NetAddress.IpAddress> = peer
  for (let index = hops.length - 1; index >= 0; index--) {
    client = forwardedAddress(hops[index] ?? "")
    if (Option.isNone(client) || !IpAllowList.contains(options.trustedProxies, client.value)) return client
  }
  // Every hop is a trusted proxy: the left-most one started the request.
  return client
}

/** Thrown at start when `KASSA_TRUSTED_PROXIES` holds something that is not an address or CIDR range. */
export class InvalidTrustedProxies extends Error {
  override readonly name = "InvalidTrustedProxies"
}

export class ClientAddress extends Context.Service<
  ClientAddress,
  {
    readonly of: (request: HttpServerRequest.HttpServerRequest) => Option.Option<NetAddress.IpAddress>
    /** `of`, given the socket peer and the `X-Forwarded-For` header (a request below the router). */
    readonly ofPeer: (peer: string | undefined, forwardedFor: string | undefined) => Option.Option<NetAddress.IpAddress>
    /** The same address as text, for audit entries and payer records; null when it cannot be told. */
    readonly text: (request: HttpServerRequest.HttpServerRequest) => string | null
  }
>()("@kassa/server/auth/ClientAddress") {
  static readonly layer = Layer.effect(
    ClientAddress,
    Effect.gen(function* () {
      const config = yield* ServerConfig
      const trustedProxies = IpAllowList.parseRanges(config.trustedProxies)
      if (trustedProxies.invalid.length > 0) {
        return yield* Effect.die(
          new InvalidTrustedProxies(
            `KASSA_TRUSTED_PROXIES: not an IP address or CIDR range: ${trustedProxies.invalid.join(", ")}`
          )
        )
      }
      // `peerAddress` is the socket peer even if a forwarding middleware rewrote `remoteAddress`.
      const of = (request: HttpServerRequest.HttpServerRequest) =>
        resolve({ peer: request.peerAddress, forwardedFor: request.headers["x-forwarded-for"], trustedProxies })
      return ClientAddress.of({
        of,
        ofPeer: (peer, forwardedFor) => resolve({ peer: Option.fromUndefinedOr(peer), forwardedFor, trustedProxies }),
        text: (request) => Option.match(of(request), { onNone: () => null, onSome: NetAddress.formatIp })
      })
    })
  )
}
