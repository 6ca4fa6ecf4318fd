# syntax=docker/dockerfile:1
# Postline's server image: `docker build -t postline .`, then see docs/operations.md.
# Keep NODE_VERSION equal to .nvmrc and PNPM_VERSION to package.json's packageManager
# (apps/server/test/deployment-kit.test.ts checks the Node major).
ARG NODE_VERSION=24.21.0
ARG PNPM_VERSION=10.34.9

# --- pnpm on the official Node image ------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS pnpm
ARG PNPM_VERSION
ENV CI=true
RUN npm install --global --no-audit --no-fund pnpm@${PNPM_VERSION}
WORKDIR /src
# The workspace's manifests and the lockfile alone, so that the installs below are cached until they change.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
COPY patches/ patches/
COPY apps/server/package.json apps/server/
COPY packages/domain/package.json packages/domain/
COPY packages/mcp/package.json packages/mcp/
COPY packages/test-bluesky/package.json packages/test-bluesky/
COPY bench/peers/package.json bench/peers/

# --- build: the server and the workspace packages it bundles, with their dev dependencies, then `pnpm build` --
FROM pnpm AS build
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store \
    pnpm install --frozen-lockfile --store-dir /pnpm/store \
      --filter @postline/server --filter @postline/domain --filter @postline/mcp
COPY tsconfig.base.json ./
COPY packages/domain/ packages/domain/
COPY packages/mcp/ packages/mcp/
COPY apps/server/ apps/server/
# apps/server/dist: main.js, admin.js, their chunks and the embedded database's template.
RUN pnpm build
# runtime-deps: a package.json and a lockfile of what the bundle loads from node_modules, nothing more.
RUN node apps/server/scripts/runtime-dependencies.mjs runtime-deps

# --- production dependencies: only the packages the bundle leaves outside (pg, @electric-sql/pglite, sharp,
# heic-decode: native code and WebAssembly) and theirs, at the workspace lockfile's versions --------------------
FROM pnpm AS prod-deps
WORKDIR /runtime
COPY --from=build /src/runtime-deps/ ./
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store \
    pnpm install --frozen-lockfile --prod --store-dir /pnpm/store

# --- runtime ----------------------------------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
# pnpm's layout: node_modules/<name> links into node_modules/.pnpm; the bundle finds them from apps/server/dist.
COPY --from=prod-deps /runtime/node_modules/ node_modules/
COPY --from=build /src/apps/server/package.json apps/server/
COPY --from=build /src/apps/server/dist/ apps/server/dist/
# The embedded database and its credentials key live in /data; /media is there to mount a shared media
# folder (MEDIA_DIR=/media). Made here, owned by `node`, so that a new named volume starts owned by it too.
RUN mkdir -p /data /media && chown node:node /data /media
VOLUME ["/data"]
USER node
EXPOSE 3000
# /health answers 200, or 503 while the server starts, stops or cannot reach its database. No curl in the slim
# image: Node's own fetch. --start-period covers DATABASE_START_RETRY_SECONDS (60 s by default).
HEALTHCHECK --interval=15s --timeout=5s --start-period=90s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The flags of `pnpm start` (package.json). Node is PID 1 and handles SIGTERM itself: in-flight requests get
# SHUTDOWN_GRACE_SECONDS (10 s); give `docker stop` more than that (`--time 30`, compose's stop_grace_period).
CMD ["node", "--max-old-space-size=128", "--max-semi-space-size=16", "--single-threaded-gc", "apps/server/dist/main.js"]
