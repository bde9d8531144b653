import { availableParallelism } from "node:os"
import { mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.ts"

// A CLI test runs `kassa` commands one after another (most in the test's process, see test/support.ts), each keeping
// a core busy while it runs. More concurrent tests than cores do not finish a file sooner; they only stretch every
// test toward its timeout (on 2 cores, 5 at once made single-invocation tests take 10 s). So at most one concurrent
// test per core (and vitest's 5 at most).
export default mergeConfig(shared, {
  test: { maxConcurrency: Math.min(5, Math.max(1, availableParallelism())) }
})
