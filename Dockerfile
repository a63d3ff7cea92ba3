# Cadre web and worker image (docker-compose.yml runs both from it).
#   docker build -t cadre .
#   docker run ... cadre npx tsx src/server.ts    (the default command)
#   docker run ... cadre npx tsx src/worker.ts
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
# same lock with `npm install --no-save`, as bin/lib/services.sh does.
COPY --chown=node:node package.json package-lock.json prisma.config.ts ./
COPY --chown=node:node prisma/schema.prisma prisma/schema.prisma
RUN (npm ci --omit=dev || npm install --omit=dev --no-save) && npm cache clean --force

COPY --chown=node:node . .

EXPOSE 3000
CMD ["npx", "tsx", "src/server.ts"]
