/**
 * A connector's SDK clients by link: one per link, made on first use from the link's key (opened only then), the
 * oldest forgotten beyond `capacity`, so a server with many links holds a few hundred clients and agents at most.
 */
import { Effect } from "effect"
import { BoundedMap } from "../support/BoundedMap.ts"
import type { LinkAccess } from "./ProviderConnector.ts"

export const make = <C, E = never>(
  makeClient: (link: LinkAccess) => Effect.Effect<C, E>,
  capacity = 256
): ((link: LinkAccess) => Effect.Effect<C, E>) => {
  const clients = new BoundedMap<string, C>(capacity)
  return (link) =>
    Effect.suspend(() => {
      const cached = clients.get(link.id)
      if (cached !== undefined) return Effect.succeed(cached)
      return Effect.map(makeClient(link), (made) => {
        clients.set(link.id, made)
        return made
      })
    })
}
