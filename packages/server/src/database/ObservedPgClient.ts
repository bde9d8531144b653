/**
 * `@effect/sql-pg`'s pooled `PgClient`, with the pool's occupancy visible (issue 14 §1: database pool in use and
 * waiting, on /metrics). `PgClient.make` builds its pool where nothing outside can reach it, and effect's
 * `Pool.stats` needs the pool; so this is `PgClient.make` itself — `makeImpl`, `ConnectionImpl` and `commit` of
 * @effect/sql-pg 4.0.5 (`src/PgClient.ts`, MIT), the same `PgPool.make` and `SqlClient.make` underneath — with every
 * checkout counted. Keep it in step with that file when upgrading the library; drop it once the library exposes its
 * pool.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type * as PgConnection from "@effect/sql-pg/PgConnection"
import * as PgPool from "@effect/sql-pg/PgPool"
import { Context, Effect, Exit, Layer, type Scope, Stream } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient, type SqlConnection, SqlError, Statement } from "effect/sql"

/** Checkouts of this process's pool, now: connections lent out, and fibers waiting for one. */
export interface PoolOccupancy {
  readonly inUse: number
  readonly waiting: number
  readonly max: number
}

export class DatabasePool extends Context.Service<DatabasePool, { readonly occupancy: () => PoolOccupancy }>()(
  "@kassa/server/database/DatabasePool"
) {}

class ConnectionImpl implements SqlConnection.Connection {
  readonly connection: PgConnection.PgConnection

  constructor(connection: PgConnection.PgConnection) {
    this.connection = connection
  }

  private run(query: string, params: ReadonlyArray<unknown>, prepare = true) {
    return Effect.map(this.connection.query(query, params, prepare), (result) => result.rows)
  }

  execute(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    return transformRows ? Effect.map(this.run(sql, params), transformRows) : this.run(sql, params)
  }
  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return this.connection.query(sql, params)
  }
  executeWithoutTransform(sql: string, params: ReadonlyArray<unknown>) {
    return this.run(sql, params)
  }
  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return this.connection.queryValues(sql, params)
  }
  executeValuesUnprepared(sql: string, params: ReadonlyArray<unknown>) {
    return this.connection.queryValues(sql, params, false)
  }
  executeUnprepared(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const operation = this.run(sql, params, false)
    return transformRows ? Effect.map(operation, transformRows) : operation
  }
  executeStream(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const stream = this.connection.stream(sql, params)
    return transformRows ? Stream.mapArray(stream, (rows) => transformRows(rows) as unknown as typeof rows) : stream
  }
}

/** PostgreSQL returns `ROLLBACK` for `COMMIT` when a transaction is aborted. */
const commit = (conn: SqlConnection.Connection): Effect.Effect<void, SqlError.SqlError> =>
  Effect.flatMap(conn.executeRaw("COMMIT", []) as Effect.Effect<PgConnection.Result, SqlError.SqlError>, (result) =>
    result.command === "ROLLBACK"
      ? Effect.fail(
          new SqlError.SqlError({
            reason: new SqlError.UnknownError({
              cause: new Error("COMMIT rolled back an aborted transaction"),
              message: "PgClient: COMMIT rolled back an aborted transaction",
              operation: "commit"
            })
          })
        )
      : Effect.void
  )

// The custom fragment PgClient's compiler renders as JSON (matched by its kind).
const PgJson = Statement.custom<Statement.Custom<"PgJson", unknown>>("PgJson")

/**
 * A pooled client whose checkouts are counted: `waiting` from the request for a connection until it is lent (or the
 * wait is given up), `inUse` from then until it is given back. The counts move in finalizers, so an interrupted wait
 * or a failed statement can never leave them off.
 */
const make = Effect.fnUntraced(function* (
  config: PgClient.PgPoolConfig
): Effect.fn.Return<
  { readonly client: PgClient.PgClient; readonly occupancy: () => PoolOccupancy },
  SqlError.SqlError,
  Scope.Scope | Reactivity.Reactivity
> {
  const pool = yield* PgPool.make(config)
  const max = config.maxConnections ?? 10
  let inUse = 0
  let waiting = 0

  /** A checkout held until the caller's scope closes (statements outside `use`, transactions, LISTEN). */
  const scoped = <A>(acquire: Effect.Effect<A, SqlError.SqlError, Scope.Scope>) =>
    Effect.suspend(() => {
      let counted = false
      return Effect.onExit(
        Effect.suspend(() => {
          counted = true
          waiting++
          return acquire
        }),
        (exit) =>
          Effect.suspend(() => {
            if (!counted) return Effect.void
            waiting--
            if (Exit.isFailure(exit)) return Effect.void
            inUse++
            return Effect.addFinalizer(() =>
              Effect.sync(() => {
                inUse--
              })
            )
          })
      )
    })

  /**
   * A checkout for one effect (the pool's fast path for a single statement, so on every request: kept to one
   * `onExit`; the pool calls `use`'s function at the moment it lends the connection).
   */
  const borrower: SqlConnection.Borrower = (f) => {
    let state = 0 // 1 waiting, 2 lent
    return Effect.onExit(
      Effect.suspend(() => {
        state = 1
        waiting++
        return pool.use((connection) => {
          waiting--
          inUse++
          state = 2
          return f(new ConnectionImpl(connection))
        })
      }),
      () => {
        if (state === 1) waiting--
        else if (state === 2) inUse--
        state = 0
        return Effect.void
      }
    )
  }

  const acquirer = Effect.map(scoped(pool.get), (connection) => new ConnectionImpl(connection))
  const transactionAcquirer = Effect.map(scoped(pool.reserve), (connection) => new ConnectionImpl(connection))

  const sqlClient = yield* SqlClient.make({
    driver: "pg",
    acquirer,
    borrower,
    // Postgres prepares transaction control like anything else (as PgClient does).
    prepareTransactionControls: true,
    commit,
    releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
    transactionAcquirer,
    compiler: PgClient.makeCompiler(config.transformQueryNames, config.transformJson),
    spanAttributes: [
      ...(config.spanAttributes ? Object.entries(config.spanAttributes) : []),
      ["db.system.name", "postgresql"],
      ["db.namespace", config.database ?? config.username ?? "postgres"],
      ["server.address", config.host ?? "localhost"],
      ["server.port", config.port ?? 5432]
    ],
    transformRows: config.transformResultNames
      ? Statement.defaultTransforms(config.transformResultNames, config.transformJson).array
      : undefined
  })
  const client: PgClient.PgClient = Object.assign(sqlClient, {
    [PgClient.TypeId]: PgClient.TypeId,
    config,
    json: (_: unknown) => Statement.fragment([PgJson(_, undefined, undefined)]),
    listen: (channel: string) => Effect.flatMap(scoped(pool.reserve), (connection) => connection.listen(channel)),
    notify: (channel: string, payload: string) =>
      Effect.asVoid(
        Effect.scoped(
          Effect.flatMap(acquirer, (conn) => conn.executeRaw("SELECT pg_notify($1, $2)", [channel, payload]))
        )
      )
  })
  return { client, occupancy: () => ({ inUse, waiting, max }) }
})

/** `PgClient.layer`, plus the pool's occupancy as `DatabasePool`. */
export const layer = (config: PgClient.PgPoolConfig) =>
  Layer.effectContext(
    Effect.map(make(config), ({ client, occupancy }) =>
      Context.make(PgClient.PgClient, client).pipe(
        Context.add(SqlClient.SqlClient, client),
        Context.add(DatabasePool, DatabasePool.of({ occupancy }))
      )
    )
  ).pipe(Layer.provide(Reactivity.layer))
