/**
 * IP addresses and ranges (decisions §5): parsing the entries of an application's allow-list and of
 * `KASSA_TRUSTED_PROXIES`, and checking whether an address falls inside them. Built on effect's strict
 * `effect/net` parsers; every address is compared in canonical form, so an IPv4-mapped IPv6 address
 * (`::ffff:127.0.0.1`, how a dual-stack socket reports an IPv4 peer) matches IPv4 entries.
 */
import { Option, Result } from "effect"
import { IpNetwork, NetAddress } from "effect/net"

/** A parsed list of ranges; `invalid` keeps the entries that are neither an address nor a CIDR range. */
export interface IpRanges {
  readonly networks: ReadonlyArray<IpNetwork.IpNetwork>
  readonly invalid: ReadonlyArray<string>
}

// Socket peers of IPv6 link-local addresses carry a zone (`fe80::1%eth0`); allow-lists name addresses, not zones.
const withoutZone = (input: string) => {
  const zone = input.indexOf("%")
  return zone === -1 ? input : input.slice(0, zone)
}

/** An address in canonical form (IPv4-mapped IPv6 becomes IPv4), or none when `input` is not one. */
export const parseAddress = (input: string): Option.Option<NetAddress.IpAddress> =>
  Option.map(Result.getSuccess(NetAddress.ipFromString(withoutZone(input.trim()))), (address) =>
    NetAddress.toCanonical(address)
  )

// An IPv4-mapped range (`::ffff:10.0.0.0/104`) is the IPv4 range it maps, so canonical addresses fall inside it.
const canonicalNetwork = (network: IpNetwork.IpNetwork): IpNetwork.IpNetwork => {
  if (!NetAddress.isIpv6Address(network.address) || network.prefixLength < 96) return network
  return Option.match(NetAddress.fromIpv4Mapped(network.address), {
    onNone: () => network,
    onSome: (ipv4) => Result.getOrElse(IpNetwork.fromAddress(ipv4, network.prefixLength - 96), () => network)
  })
}

/**
 * One entry: a single address (a /32 or /128 range) or a CIDR range. Host bits are cleared (`10.0.0.1/8` is
 * `10.0.0.0/8`), which is what an operator writing it means.
 */
export const parseRange = (input: string): Option.Option<IpNetwork.IpNetwork> => {
  const trimmed = input.trim()
  const slash = trimmed.indexOf("/")
  const addressPart = slash === -1 ? trimmed : trimmed.slice(0, slash)
  const prefixPart = slash === -1 ? undefined : trimmed.slice(slash + 1)
  if (prefixPart !== undefined && !/^\d{1,3}$/.test(prefixPart)) return Option.none()
  return Result.getSuccess(NetAddress.ipFromString(addressPart)).pipe(
    Option.flatMap((address) =>
      Result.getSuccess(
        IpNetwork.fromAddress(address, prefixPart === undefined ? NetAddress.width(address) : Number(prefixPart))
      )
    ),
    Option.map(canonicalNetwork)
  )
}

/** Parses every entry of a list. */
export const parseRanges = (entries: ReadonlyArray<string>): IpRanges => {
  const networks: Array<IpNetwork.IpNetwork> = []
  const invalid: Array<string> = []
  for (const entry of entries) {
    Option.match(parseRange(entry), {
      onNone: () => invalid.push(entry),
      onSome: (network) => networks.push(network)
    })
  }
  return { networks, invalid }
}

/** Whether an address (canonical, as from {@link parseAddress}) falls inside one of the ranges. */
export const contains = (ranges: IpRanges, address: NetAddress.IpAddress): boolean =>
  ranges.networks.some((network) => IpNetwork.contains(network, address))

/**
 * Whether an application's allow-list lets a request from `client` through. An empty list means no restriction.
 * Otherwise it fails closed: an unknown client address, or a list whose entries are all invalid, lets nothing in.
 */
export const allows = (entries: ReadonlyArray<string>, client: Option.Option<NetAddress.IpAddress>): boolean => {
  if (entries.length === 0) return true
  if (Option.isNone(client)) return false
  return contains(parseRanges(entries), client.value)
}
