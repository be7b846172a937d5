# One recipe, one target per process: `docker build --target api .` (also `worker`, `migrate`).
# Node 24 runs the TypeScript sources directly, so there is no build stage to keep in step.
FROM node:24-slim AS base
# Production unless told otherwise: it refuses the development admin token and keys from this
# repository, and needs METRICS_TOKEN or METRICS_PORT (README, "Configuration"). docker-compose.yml,
# a local development stack, sets APP_ENV=development itself.
ENV NODE_ENV=production APP_ENV=production
RUN npm install -g --no-audit --no-fund --loglevel=error pnpm@12.21.0
WORKDIR /app

# Manifests first: the dependency layer is reused for as long as they do not change.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY apps/api/package.json apps/api/
COPY apps/worker/package.json apps/worker/
COPY packages/contracts/package.json packages/contracts/
COPY packages/db/package.json packages/db/
COPY packages/runtime/package.json packages/runtime/
COPY packages/templates/package.json packages/templates/
COPY packages/testing/package.json packages/testing/
RUN pnpm install --frozen-lockfile --prod

COPY . .
# Without SMTP_URL the worker writes e-mails here; the app runs as the unprivileged `node` user.
RUN mkdir -p /app/.mail && chown node:node /app/.mail
USER node

FROM base AS api
ENV HOST=0.0.0.0 PORT=3000
EXPOSE 3000
CMD ["node", "apps/api/src/server.ts"]

FROM base AS worker
CMD ["node", "apps/worker/src/main.ts"]

FROM base AS migrate
CMD ["node", "packages/db/src/migrate-cli.ts"]
