# syntax=docker/dockerfile:1
# The Kassa server as an image: built in one stage, run from a pruned copy (production dependencies only) as a
# non-root user. Settings come from the environment (see the README's settings table); compose.yaml shows a setup
# with PostgreSQL and Redis.

FROM node:24.21.0-bookworm-slim AS build
WORKDIR /src
# The pinned package manager (tools/package.json).
RUN npm install --global pnpm@12.21.0
COPY . .
RUN pnpm install --frozen-lockfile \
 && pnpm --filter "@kassa/server..." build \
 && pnpm --filter @kassa/server --prod deploy --legacy /app

FROM node:24.21.0-bookworm-slim
ENV KASSA_ENV=production \
    KASSA_HOST=0.0.0.0 \
    KASSA_PORT=4000 \
    KASSA_DATA_DIR=/var/lib/kassa
WORKDIR /app
# The code belongs to root and is read-only to the server; only its data directory is its own.
COPY --from=build /app /app
RUN mkdir -p /var/lib/kassa && chown node:node /var/lib/kassa
USER node
EXPOSE 4000
# Ready = database reachable, schema current, not draining (GET /readyz); the image has no curl, Node has fetch.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.KASSA_PORT || 4000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The flags of `npm start` (packages/server/package.json): the young generation and heap chosen in docs/decisions.md.
CMD ["node", "--max-semi-space-size=32", "--max-old-space-size=320", "--initial-old-space-size=128", "dist/main.js"]
