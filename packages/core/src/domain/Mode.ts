import { Schema } from "effect"

/** The mode of a key, and so of everything done with it: `test` goes to the simulator, `live` to the provider. */
export const Mode = Schema.Literals(["test", "live"])
export type Mode = typeof Mode.Type
