/**
 * `kassa serve`: the reference server of `@kassa/server` as its own `main.ts` runs it (`Launch.layer`: demo seed
 * and banner, logging, settings), with `--port`, `--host`, `--data-dir`, `--migrate` and `--workers` laid over the
 * environment; `--workers N` runs N processes on the port (the server's Cluster).
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { dataDir, serverSettings } from "../Settings.ts"

export const serve = Command.make(
  "serve",
  {
    port: Flag.Int("port").pipe(
      Flag.withDescription("The port to listen on (env KASSA_PORT, default 4000)"),
      Flag.optional
    ),
    host: Flag.String("host").pipe(
      Flag.withDescription("The address to listen on (env KASSA_HOST, default 127.0.0.1)"),
      Flag.optional
    ),
    dataDir,
    migrate: Flag.Boolean("migrate").pipe(
      Flag.withDescription(
        "Apply pending migrations at start (env KASSA_MIGRATE, default true); --no-migrate serves only a schema " +
          "`kassa migrate` brought up to date"
      ),
      Flag.optional
    ),
    workers: Flag.String("workers").pipe(
      Flag.withDescription(
        "Server processes on the one port: a number or `auto` (= cores) (env KASSA_WORKERS, default 1); " +
          "more than 1 needs DATABASE_URL (PostgreSQL)"
      ),
      Flag.optional
    )
  },
  Effect.fn("serve")(function* ({ port, host, dataDir, migrate, workers }) {
    // Loaded here, not at the top: every other command starts without the server's modules.
    const { Cluster } = yield* Effect.promise(() => import("@kassa/server"))
    const environment = serverSettings({
      KASSA_PORT: Option.map(port, String),
      KASSA_HOST: host,
      KASSA_DATA_DIR: dataDir,
      KASSA_MIGRATE: Option.map(migrate, String),
      KASSA_WORKERS: workers
    })
    // A cluster worker re-runs this same command line (node:cluster forks argv as is) and serves as one process.
    return yield* Cluster.run.pipe(Effect.provide(environment))
  })
).pipe(Command.withDescription("Run the Kassa server (with the demo application on a first start); stop with Ctrl-C"))
