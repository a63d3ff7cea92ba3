# Cadre web and worker image (docker-compose.yml runs both from it).
#   docker build -t cadre .
#   docker run ... cadre node dist/server.js    (the default command)
#   docker run ... cadre node dist/worker.js
FROM node:22-bookworm-slim

# openssl and CA certificates for Prisma's platform detection and TLS to external services.
RUN apt-get update \
  && apt-get install -y --no-install-recommends openssl ca-certificates \
  && rm -rf /var/lib/apt/lists/*

ENV NODE_ENV=production \
  HOST=0.0.0.0 \
  PORT=3000 \
  NPM_CONFIG_UPDATE_NOTIFIER=false \
  NPM_CONFIG_FUND=false \
  NPM_CONFIG_AUDIT=false

WORKDIR /app
RUN chown node:node /app
USER node

# Dependencies first (cached until the lockfile or schema changes). The postinstall step runs
# `prisma generate`, which needs the schema and prisma.config.ts. When npm ci rejects a lock that
# npm itself wrote without other platforms' optional binaries (npm/cli#9846), install from the
# same lock with `npm install --no-save`, as bin/lib/services.sh does. The compiler is a dev
# dependency (and NODE_ENV=production would omit it): installed for the build, pruned after.
COPY --chown=node:node package.json package-lock.json prisma.config.ts ./
COPY --chown=node:node prisma/schema.prisma prisma/schema.prisma
RUN (npm ci --include=dev || npm install --include=dev --no-save) && npm cache clean --force

COPY --chown=node:node . .
# What runs is the compiled JavaScript: a worker run from source carries tsx's loader twice
# (its main thread and the relay's), about 110 MB (bench/HISTORY.md, "The third stop").
RUN npm run build && npm prune --omit=dev

EXPOSE 3000
CMD ["node", "dist/server.js"]
