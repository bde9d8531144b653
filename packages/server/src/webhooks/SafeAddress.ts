/**
 * SSRF protection for webhook attempts (decisions §7): in production a webhook URL must be `https` and every address
 * it connects to must be public. The check runs where the connection is made: {@link checkedLookup} is the `lookup`
 * Node's socket calls after parsing the URL, so the addresses checked are exactly the ones connected to (pinned for
 * that connection; a second DNS answer can never slip in between check and connect). IP literals skip DNS, so
 * {@link literalHost} checks those before the request.
 *
 * Refused: loopback, private (RFC 1918, IPv6 site-local), link-local, cloud metadata, CGNAT, ULA, IPv4-mapped,
 * IPv4-compatible and IPv4-translated IPv6, NAT64, 6to4 and Teredo tunnels (they embed any IPv4 address),
 * unspecified, multicast, broadcast, documentation, benchmarking and other reserved ranges.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOptions } from "node:dns"
import { isIP } from "node:net"

/** Why an address is refused. */
export type BlockedClass =
  | "loopback"
  | "private"
  | "link_local"
  | "metadata"
  | "cgnat"
  | "unique_local"
  | "ipv4_mapped"
  | "nat64"
  | "tunnel"
  | "unspecified"
  | "multicast"
  | "documentation"
  | "reserved"

interface Range {
  readonly bytes: Uint8Array
  readonly prefix: number
  readonly blocked: BlockedClass
}

const parseIpv4 = (text: string): Uint8Array | null => {
  const parts = text.split(".")
  if (parts.length !== 4) return null
  const bytes = new Uint8Array(4)
  for (const [index, part] of parts.entries()) {
    if (!/^[0-9]{1,3}$/.test(part)) return null
    const value = Number(part)
    if (value > 255) return null
    bytes[index] = value
  }
  return bytes
}

const parseIpv6 = (input: string): Uint8Array | null => {
  // A zone (`fe80::1%eth0`) names the interface, not part of the address.
  const text = input.split("%")[0] ?? ""
  const halves = text.split("::")
  if (halves.length > 2) return null
  const groups = (half: string): Array<number> | null => {
    if (half === "") return []
    const out: Array<number> = []
    const pieces = half.split(":")
    for (const [index, piece] of pieces.entries()) {
      if (index === pieces.length - 1 && piece.includes(".")) {
        const v4 = parseIpv4(piece)
        if (v4 === null) return null
        out.push(((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0))
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(piece)) return null
        out.push(Number.parseInt(piece, 16))
      }
    }
    return out
  }
  const head = groups(halves[0] ?? "")
  const tail = halves.length === 2 ? groups(halves[1] ?? "") : []
  if (head === null || tail === null) return null
  const missing = 8 - head.length - tail.length
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null
  const all = [...head, ...Array.from({ length: halves.length === 2 ? missing : 0 }, () => 0), ...tail]
  const bytes = new Uint8Array(16)
  for (const [index, group] of all.entries()) {
    bytes[index * 2] = group >> 8
    bytes[index * 2 + 1] = group & 0xff
  }
  return bytes
}

/** The address as bytes (4 or 16), or null when it is not an IP address. */
export const parseAddress = (address: string): Uint8Array | null => {
  const version = isIP(address.split("%")[0] ?? "")
  return version === 4 ? parseIpv4(address) : version === 6 ? parseIpv6(address) : null
}

const range = (cidr: string, blocked: BlockedClass): Range => {
  const [address = "", prefix = ""] = cidr.split("/")
  const bytes = parseAddress(address)
  if (bytes === null) throw new Error(`bad range ${cidr}`)
  return { bytes, prefix: Number(prefix), blocked }
}

// Order matters: the first matching range names the class (metadata before the link-local or ULA range around it).
const ipv4Ranges: ReadonlyArray<Range> = [
  range("169.254.169.254/32", "metadata"), // AWS, GCP, Azure, OpenStack instance metadata
  range("100.100.100.200/32", "metadata"), // Alibaba Cloud
  range("168.63.129.16/32", "metadata"), // Azure wire server (a public address)
  range("0.0.0.0/8", "unspecified"),
  range("10.0.0.0/8", "private"),
  range("100.64.0.0/10", "cgnat"),
  range("127.0.0.0/8", "loopback"),
  range("169.254.0.0/16", "link_local"),
  range("172.16.0.0/12", "private"),
  range("192.0.0.0/24", "reserved"), // IETF protocol assignments
  range("192.0.2.0/24", "documentation"),
  range("192.88.99.0/24", "tunnel"), // 6to4 relay anycast
  range("192.168.0.0/16", "private"),
  range("198.18.0.0/15", "reserved"), // benchmarking
  range("198.51.100.0/24", "documentation"),
  range("203.0.113.0/24", "documentation"),
  range("224.0.0.0/4", "multicast"),
  range("240.0.0.0/4", "reserved") // class E and the broadcast address
]

const ipv6Ranges: ReadonlyArray<Range> = [
  range("::/128", "unspecified"),
  range("::1/128", "loopback"),
  range("::ffff:0:0/96", "ipv4_mapped"),
  range("::ffff:0:0:0/96", "ipv4_mapped"), // IPv4-translated
  range("::/96", "ipv4_mapped"), // IPv4-compatible (deprecated)
  range("64:ff9b::/96", "nat64"),
  range("64:ff9b:1::/48", "nat64"), // local-use NAT64
  range("100::/64", "reserved"), // discard
  range("2001::/32", "tunnel"), // Teredo
  range("2001:db8::/32", "documentation"),
  range("2002::/16", "tunnel"), // 6to4
  range("fd00:ec2::254/128", "metadata"), // AWS IPv6 instance metadata
  range("fc00::/7", "unique_local"),
  range("fe80::/10", "link_local"),
  range("fec0::/10", "private"), // site-local (deprecated)
  range("ff00::/8", "multicast")
]

const matches = (bytes: Uint8Array, { bytes: network, prefix }: Range): boolean => {
  if (bytes.length !== network.length) return false
  const whole = Math.floor(prefix / 8)
  for (let index = 0; index < whole; index++) if (bytes[index] !== network[index]) return false
  const rest = prefix % 8
  if (rest === 0) return true
  const mask = (0xff << (8 - rest)) & 0xff
  return ((bytes[whole] ?? 0) & mask) === ((network[whole] ?? 0) & mask)
}

/** Why the address is refused, or null for a public address. Something that is not an IP address is "reserved". */
export const classify = (address: string): BlockedClass | null => {
  const bytes = parseAddress(address)
  if (bytes === null) return "reserved"
  for (const candidate of bytes.length === 4 ? ipv4Ranges : ipv6Ranges) {
    if (matches(bytes, candidate)) return candidate.blocked
  }
  return null
}

export const isPublic = (address: string): boolean => classify(address) === null

/** The error a refused connection fails with; the sender records it as `blocked_address`. */
export class BlockedAddressError extends Error {
  readonly code = "EKASSA_BLOCKED_ADDRESS"
  readonly host: string
  readonly blocked: BlockedClass
  constructor(host: string, blocked: BlockedClass) {
    super(`${host} resolves to a ${blocked} address, which webhooks may not reach`)
    this.name = "BlockedAddressError"
    this.host = host
    this.blocked = blocked
  }
}

export const isBlockedAddressError = (error: unknown): error is BlockedAddressError =>
  error instanceof BlockedAddressError

/** `host` of a URL as an IP literal (brackets removed), or null for a name that needs DNS. */
export const literalHost = (hostname: string): string | null => {
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname
  return isIP(bare) === 0 ? null : bare
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | Array<LookupAddress>,
  family?: number
) => void

/** A resolver with the shape of `dns.lookup` asked for every address (injectable in tests). */
export type Resolver = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: ReadonlyArray<LookupAddress>) => void
) => void

export const systemResolver: Resolver = (hostname, options, callback) =>
  dnsLookup(hostname, options, (error, addresses) => callback(error, addresses ?? []))

/**
 * A `lookup` for `http.request`/`net.connect` that resolves every address and refuses the host when any of them is
 * not public: a name that also points inside the network is not a receiver. With `check` false (outside
 * production) it only resolves.
 */
export const checkedLookup =
  (resolve: Resolver, check: boolean) =>
  (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname, { family: options.family ?? 0, hints: options.hints ?? 0, all: true }, (error, addresses) => {
      if (error !== null) return callback(error, [])
      if (addresses.length === 0) {
        const none: NodeJS.ErrnoException = Object.assign(new Error(`${hostname} has no address`), {
          code: "ENOTFOUND"
        })
        return callback(none, [])
      }
      if (check) {
        for (const { address } of addresses) {
          const blocked = classify(address)
          if (blocked !== null) return callback(new BlockedAddressError(hostname, blocked), [])
        }
      }
      if (options.all === true) return callback(null, [...addresses])
      const [first] = addresses
      return callback(null, first?.address ?? "", first?.family ?? 4)
    })
  }
