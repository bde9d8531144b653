/**
 * The states the core's LoginThrottle decides on — per client address, and per account and address — kept in this
 * process's memory (issue #11). Why memory and not the database: the throttle protects this process's own password
 * hasher, which is what a flood exhausts; a table would turn every refused guess into a database write an attacker
 * controls. The cost: with several server processes behind one balancer a guesser gets each process's allowance
 * (a small constant factor on delays that double), and a restart forgets the states. Both maps are bounded; the
 * least recently touched entry goes first.
 *
 * IPv6 clients are counted by their /64 network: one subscriber usually holds a whole /64, so counting single
 * addresses would give them 2^64 fresh allowances.
 */
import { LoginThrottle } from "@kassa/core"
import type { DateTime } from "effect"
import { BoundedMap } from "../support/BoundedMap.ts"

/** Entries kept per map; about 100 bytes each. */
const maxEntries = 50_000

/** The key a client address is counted under: IPv4 as it is, IPv6 by its /64 network; "unknown" when not known. */
export const addressKey = (address: string | null): string => {
  if (address === null) return "unknown"
  if (!address.includes(":")) return address
  const [head = "", tail] = address.toLowerCase().split("::")
  const left = head === "" ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const groups = [...left, ...Array.from({ length: Math.max(0, 8 - left.length - right.length) }, () => "0"), ...right]
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`
}

export interface SignInThrottle {
  /**
   * The core's decision for an attempt on `account` (a normalised e-mail address, known or not) from `address`; on
   * `Check` the address holds one of its in-flight slots until {@link SignInThrottle.done}.
   */
  readonly enter: (address: string | null, account: string, now: DateTime.Utc) => LoginThrottle.Admission
  /** Frees the slot {@link SignInThrottle.enter} took, and records the outcome of the check (none: not checked). */
  readonly done: (
    address: string | null,
    account: string,
    outcome: "right" | "wrong" | "none",
    now: DateTime.Utc
  ) => LoginThrottle.PairState
  /** Forgets every pair of `account` (its password was just set: the old guesses are moot). */
  readonly forgetAccount: (account: string) => void
}

export const make = (): SignInThrottle => {
  const addresses = new BoundedMap<string, LoginThrottle.AddressState>(maxEntries)
  const pairs = new BoundedMap<string, LoginThrottle.PairState>(maxEntries)
  const inFlight = new Map<string, number>()
  // The address key cannot contain a newline; e-mail addresses are matched after it.
  const pairKey = (address: string, account: string) => `${address}\n${account}`

  return {
    enter: (rawAddress, account, now) => {
      const address = addressKey(rawAddress)
      const admission = LoginThrottle.admit({
        address: addresses.get(address) ?? LoginThrottle.initialAddress,
        pair: pairs.get(pairKey(address, account)) ?? LoginThrottle.initialPair,
        inFlight: inFlight.get(address) ?? 0,
        now
      })
      if (admission._tag === "Check") inFlight.set(address, (inFlight.get(address) ?? 0) + 1)
      return admission
    },
    done: (rawAddress, account, outcome, now) => {
      const address = addressKey(rawAddress)
      const left = (inFlight.get(address) ?? 1) - 1
      if (left <= 0) inFlight.delete(address)
      else inFlight.set(address, left)
      const key = pairKey(address, account)
      const pair = pairs.get(key) ?? LoginThrottle.initialPair
      switch (outcome) {
        case "none":
          return pair
        case "right":
          pairs.delete(key)
          return LoginThrottle.pairAfterSuccess()
        case "wrong": {
          const next = LoginThrottle.pairAfterFailure(pair, now)
          pairs.set(key, next)
          addresses.set(
            address,
            LoginThrottle.addressAfterFailure(addresses.get(address) ?? LoginThrottle.initialAddress, now)
          )
          return next
        }
      }
    },
    forgetAccount: (account) => pairs.deleteWhere((key) => key.endsWith(`\n${account}`))
  }
}
