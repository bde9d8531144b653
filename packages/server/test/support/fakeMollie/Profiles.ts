/**
 * Website profiles and their API keys: one `test_…` and one `live_…` key per profile, and the key fixes both the
 * mode and the profile (research mollie.md §7). `GET /v2/profiles/me` answers the key's profile.
 */
import { type Clock, type JsonObject, link, MollieFailure, randomId } from "./Shapes.ts"

export interface Profile {
  readonly id: string
  readonly key: string
  readonly mode: "live" | "test"
  /** Methods activated on the profile; others are refused at create (mollie.md §1, issue 21's "traps"). */
  readonly methods: Set<string>
  readonly object: JsonObject
}

export interface Profiles {
  readonly add: (options?: { readonly livemode?: boolean }) => Profile
  /** The profile of `Authorization: Bearer <key>`; 401 otherwise ([old] handling-errors.rst). */
  readonly authenticate: (authorization: string | undefined) => Profile
}

/** The methods a new profile has active. */
export const defaultMethods = ["creditcard", "ideal", "bancontact", "paypal", "banktransfer", "klarna"]

export const makeProfiles = (clock: Clock, base: string): Profiles => {
  const byKey = new Map<string, Profile>()
  return {
    add: (options = {}) => {
      const mode = options.livemode === true ? "live" : "test"
      const id = randomId("pfl")
      const key = `${randomId(mode, 30)}`
      const profile: Profile = {
        id,
        key,
        mode,
        methods: new Set(defaultMethods),
        object: {
          resource: "profile",
          id,
          mode,
          name: "Kassa test shop",
          website: "https://shop.example",
          email: "shop@example.com",
          phone: "+31208202070",
          businessCategory: "OTHER_MERCHANDISE",
          status: "verified",
          createdAt: clock.iso(),
          _links: {
            self: link(`${base}/v2/profiles/${id}`),
            dashboard: link(`https://my.mollie.com/dashboard/settings/profiles/${id}`, "text/html")
          }
        }
      }
      byKey.set(key, profile)
      return profile
    },
    authenticate: (authorization) => {
      const key = authorization?.match(/^Bearer (\S+)$/)?.[1]
      const profile = key === undefined ? undefined : byKey.get(key)
      if (profile === undefined) {
        throw new MollieFailure(401, "Unauthorized Request", "Missing authentication, or failed to authenticate")
      }
      return profile
    }
  }
}
