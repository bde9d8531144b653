import { Option } from "effect"
import { NetAddress } from "effect/net"
import { describe, expect, it } from "vitest"
import * as ClientAddress from "../src/auth/ClientAddress.ts"
import * as IpAllowList from "../src/auth/IpAllowList.ts"

const ip = (input: string) => NetAddress.ipFromStringUnsafe(input)
const formatted = (address: Option.Option<NetAddress.IpAddress>) =>
  Option.getOrUndefined(Option.map(address, NetAddress.formatIp))
const allows = (entries: ReadonlyArray<string>, client: string) =>
  IpAllowList.allows(entries, IpAllowList.parseAddress(client))

describe("IpAllowList.parseAddress", () => {
  it("reads IPv4 and IPv6 addresses in canonical form", () => {
    expect(formatted(IpAllowList.parseAddress("203.0.113.7"))).toBe("203.0.113.7")
    expect(formatted(IpAllowList.parseAddress("2001:DB8:0::1"))).toBe("2001:db8::1")
    expect(formatted(IpAllowList.parseAddress(" 198.51.100.1 "))).toBe("198.51.100.1")
  })

  it("reads IPv4-mapped IPv6 addresses as IPv4", () => {
    expect(formatted(IpAllowList.parseAddress("::ffff:127.0.0.1"))).toBe("127.0.0.1")
    expect(formatted(IpAllowList.parseAddress("::ffff:7f00:1"))).toBe("127.0.0.1")
  })

  it("drops the zone of a link-local socket peer", () => {
    expect(formatted(IpAllowList.parseAddress("fe80::1%eth0"))).toBe("fe80::1")
  })

  it("refuses what is not an address", () => {
    for (const input of ["", "localhost", "1.2.3", "256.1.1.1", "01.2.3.4", "10.0.0.0/8", "::g", "1.2.3.4:80"]) {
      expect(IpAllowList.parseAddress(input), input).toEqual(Option.none())
    }
  })
})

describe("IpAllowList.parseRanges", () => {
  it("reads single addresses, CIDR ranges and mapped ranges; keeps what it cannot read apart", () => {
    const ranges = IpAllowList.parseRanges([
      "203.0.113.7",
      "10.0.0.0/8",
      "2001:db8::/32",
      "::1",
      "::ffff:192.168.0.0/112",
      "10.0.0.1/33",
      "example.com",
      "10.0.0.0/",
      "10.0.0.0/+8"
    ])
    expect(ranges.networks.map((network) => `${NetAddress.formatIp(network.address)}/${network.prefixLength}`)).toEqual(
      ["203.0.113.7/32", "10.0.0.0/8", "2001:db8::/32", "::1/128", "192.168.0.0/16"]
    )
    expect(ranges.invalid).toEqual(["10.0.0.1/33", "example.com", "10.0.0.0/", "10.0.0.0/+8"])
  })

  it("clears host bits of a range written with them", () => {
    const ranges = IpAllowList.parseRanges(["10.1.2.3/8"])
    expect(IpAllowList.contains(ranges, ip("10.200.0.1"))).toBe(true)
    expect(IpAllowList.contains(ranges, ip("11.0.0.1"))).toBe(false)
  })
})

describe("IpAllowList.allows", () => {
  it("an empty list lets every address in, even an unknown one", () => {
    expect(allows([], "203.0.113.7")).toBe(true)
    expect(IpAllowList.allows([], Option.none())).toBe(true)
  })

  it("matches single IPv4 addresses exactly", () => {
    expect(allows(["203.0.113.7"], "203.0.113.7")).toBe(true)
    expect(allows(["203.0.113.7"], "203.0.113.8")).toBe(false)
  })

  it("matches IPv4 CIDR ranges at their edges", () => {
    const list = ["198.51.100.0/24"]
    expect(allows(list, "198.51.100.0")).toBe(true)
    expect(allows(list, "198.51.100.255")).toBe(true)
    expect(allows(list, "198.51.101.0")).toBe(false)
    expect(allows(list, "198.51.99.255")).toBe(false)
    expect(allows(["0.0.0.0/0"], "8.8.8.8")).toBe(true)
  })

  it("matches IPv6 addresses and ranges", () => {
    expect(allows(["2001:db8::/32"], "2001:db8:ffff::1")).toBe(true)
    expect(allows(["2001:db8::/32"], "2001:db9::1")).toBe(false)
    expect(allows(["::1"], "::1")).toBe(true)
    expect(allows(["::1"], "::2")).toBe(false)
  })

  it("matches an IPv4-mapped peer against IPv4 entries and a mapped entry against IPv4 peers", () => {
    expect(allows(["127.0.0.1"], "::ffff:127.0.0.1")).toBe(true)
    expect(allows(["127.0.0.0/8"], "::ffff:127.1.2.3")).toBe(true)
    expect(allows(["10.0.0.0/8"], "::ffff:127.0.0.1")).toBe(false)
    expect(allows(["::ffff:127.0.0.1"], "127.0.0.1")).toBe(true)
  })

  it("never mixes families beyond mapped addresses", () => {
    expect(allows(["::/0"], "127.0.0.1")).toBe(false)
    expect(allows(["0.0.0.0/0"], "::1")).toBe(false)
  })

  it("fails closed: an unknown client address or a list of only invalid entries lets nothing in", () => {
    expect(IpAllowList.allows(["203.0.113.7"], Option.none())).toBe(false)
    expect(allows(["not-an-address"], "203.0.113.7")).toBe(false)
    expect(allows(["not-an-address", "203.0.113.7"], "203.0.113.7")).toBe(true)
  })
})

describe("ClientAddress.resolve", () => {
  const resolve = (peer: string | undefined, forwardedFor: string | undefined, trusted: ReadonlyArray<string> = []) =>
    formatted(
      ClientAddress.resolve({
        peer: Option.fromUndefinedOr(peer),
        forwardedFor,
        trustedProxies: IpAllowList.parseRanges(trusted)
      })
    )

  it("is the socket peer when no proxy is trusted, whatever X-Forwarded-For says", () => {
    expect(resolve("198.51.100.9", undefined)).toBe("198.51.100.9")
    // Spoofing: an untrusted peer cannot choose its address by sending the header.
    expect(resolve("198.51.100.9", "203.0.113.7")).toBe("198.51.100.9")
  })

  it("is the socket peer when the peer is not one of the trusted proxies", () => {
    expect(resolve("198.51.100.9", "203.0.113.7", ["10.0.0.0/8"])).toBe("198.51.100.9")
  })

  it("reads a mapped socket peer as IPv4", () => {
    expect(resolve("::ffff:198.51.100.9", undefined)).toBe("198.51.100.9")
  })

  it("is the right-most untrusted X-Forwarded-For entry behind trusted proxies", () => {
    const trusted = ["10.0.0.0/8", "2001:db8:1::/48"]
    expect(resolve("10.0.0.2", "203.0.113.7", trusted)).toBe("203.0.113.7")
    expect(resolve("10.0.0.2", "203.0.113.7, 10.0.0.5", trusted)).toBe("203.0.113.7")
    expect(resolve("::ffff:10.0.0.2", "203.0.113.7,10.0.0.5, 10.1.1.1", trusted)).toBe("203.0.113.7")
    expect(resolve("2001:db8:1::2", "2001:db8:2::7", trusted)).toBe("2001:db8:2::7")
  })

  it("ignores what the client itself wrote left of its own address (spoofing through a proxy)", () => {
    // The client sent `X-Forwarded-For: 192.0.2.1`; the trusted proxy appended the address it saw.
    expect(resolve("10.0.0.2", "192.0.2.1, 203.0.113.7", ["10.0.0.0/8"])).toBe("203.0.113.7")
    // The client claimed to be a trusted proxy: only the proxy's own entry counts.
    expect(resolve("10.0.0.2", "10.9.9.9, 203.0.113.7", ["10.0.0.0/8"])).toBe("203.0.113.7")
  })

  it("reads entries with ports or brackets", () => {
    expect(resolve("10.0.0.2", "203.0.113.7:4711", ["10.0.0.0/8"])).toBe("203.0.113.7")
    expect(resolve("10.0.0.2", "[2001:db8::7]:443", ["10.0.0.0/8"])).toBe("2001:db8::7")
  })

  it("is the proxy itself when it forwarded nothing, and the left-most hop when every hop is trusted", () => {
    expect(resolve("10.0.0.2", undefined, ["10.0.0.0/8"])).toBe("10.0.0.2")
    expect(resolve("10.0.0.2", " , ", ["10.0.0.0/8"])).toBe("10.0.0.2")
    expect(resolve("10.0.0.2", "10.0.0.3, 10.0.0.4", ["10.0.0.0/8"])).toBe("10.0.0.3")
  })

  it("is unknown when the entry that counts is not an address", () => {
    expect(resolve("10.0.0.2", "203.0.113.7, garbage", ["10.0.0.0/8"])).toBeUndefined()
    expect(resolve(undefined, undefined)).toBeUndefined()
  })
})
