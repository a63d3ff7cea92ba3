// Builds the Fastify app as a plugin tree; it never listens (see server.ts). Load
// order: external plugins → app plugins (tenancy, auth, errors) → routes.
import { fileURLToPath } from "node:url";
import cookie from "@fastify/cookie";
import fastifyStatic from "@fastify/static";
import view from "@fastify/view";
import { Eta } from "eta";
import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from "fastify";
import type { Config } from "./config.ts";
import { type PrismaClient, prismaFromConfig } from "./db/prisma.ts";
import bodyParsers, { BODY_LIMIT } from "./http/body-parsers.ts";
import { redactUrl } from "./lib/url-redact.ts";
import audit from "./plugins/audit.ts";
import auth from "./plugins/auth.ts";
import errors, { sendError } from "./plugins/errors.ts";
import live from "./plugins/live.ts";
import metrics from "./plugins/metrics.ts";
import prismaPlugin from "./plugins/prisma.ts";
import rateLimit from "./plugins/rate-limit.ts";
import securityHeaders from "./plugins/security-headers.ts";
import tenancy from "./plugins/tenancy.ts";
import tracing from "./plugins/tracing.ts";
import accountRoutes from "./routes/accounts.ts";
import authRoutes from "./routes/auth.ts";
import confirmRoutes from "./routes/confirm.ts";
import experimentCsvRoutes from "./routes/experiment-csv.ts";
import healthRoutes from "./routes/health.ts";
import invitationRoutes from "./routes/invitations.ts";
import mcpRoutes from "./routes/mcp.ts";
import mentionableRoutes from "./routes/mentionable.ts";
import notificationOpenRoutes from "./routes/notification-open.ts";
import pageRoutes from "./routes/pages.ts";
import passkeyRoutes from "./routes/passkeys.ts";
import passwordResetRoutes from "./routes/password-reset.ts";
import secondStepRoutes from "./routes/second-step.ts";
import secretRoutes from "./routes/secrets.ts";
import signupRoutes, { isSignupPath } from "./routes/signup.ts";
import ssoRoutes from "./routes/sso.ts";
import toolSignInRoutes from "./routes/tool-sign-in.ts";
import usageCsvRoutes from "./routes/usage-csv.ts";
import webhookRoutes from "./routes/webhooks.ts";
import { configureHostnames } from "./services/accounts/hostnames.ts";
import { signupPolicy } from "./services/accounts/signup.ts";
import { configureStepUp } from "./services/accounts/step-up.ts";
import { configureKeyring } from "./services/money/keyring.ts";
import { setMailConfigured } from "./services/reach/preferences.ts";

export interface AppOptions {
  config: Config;
  /** Shared client (tests); otherwise the app creates and closes its own. */
  prisma?: PrismaClient;
  /** false: no log; a stream: the log's JSON lines go there instead of stdout (tests read them). */
  logger?: boolean | { stream: { write(line: string): void } };
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { config } = opts;
  configureKeyring(config);
  configureHostnames(config);
  configureStepUp(config);
  setMailConfigured(Boolean(config.SMTP_URL));
  const app = Fastify({
    logger: loggerOptions(opts),
    bodyLimit: BODY_LIMIT,
    frameworkErrors: answerFrameworkError,
    trustProxy: config.TRUST_PROXY,
  });
  await registerExternalPlugins(app, opts);
  await registerAppPlugins(app, config);
  await registerRoutes(app, config);
  return app;
}

type Logger = FastifyServerOptions["logger"];

function loggerOptions(opts: AppOptions): Logger {
  if (opts.logger === false) return false;
  return {
    level: opts.config.LOG_LEVEL,
    redact: ["req.headers.authorization", "req.headers.cookie"],
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: redactUrl(request.url),
        host: request.host,
        remoteAddress: request.ip,
      }),
    },
    ...(typeof opts.logger === "object" && { stream: opts.logger.stream }),
  };
}

/**
 * Refused before routing (a path whose %-escapes are not UTF-8, `/studios/%FF`): answered
 * in the request's format like any other bad input, not as Fastify's JSON.
 */
const answerFrameworkError: NonNullable<FastifyServerOptions["frameworkErrors"]> = (error, request, reply) =>
  sendError(
    request,
    reply,
    error.statusCode ?? 400,
    error.code === "FST_ERR_BAD_URL"
      ? "This address is not valid: its %-escapes are not UTF-8 text."
      : error.message,
  );

const sessionLimitsOf = (config: Config) => ({
  idleHours: config.SESSION_IDLE_HOURS,
  absoluteHours: config.SESSION_ABSOLUTE_HOURS,
});

/** Tracing, headers, the database, cookies, bodies, views and assets: what every request may use. */
async function registerExternalPlugins(app: FastifyInstance, opts: AppOptions) {
  const { config } = opts;
  // First, so its span covers the request from the start (a no-op unless tracing is on).
  await app.register(tracing);
  // Before anything that answers, so every answer (errors and redirects too) carries its headers.
  await app.register(securityHeaders);
  await app.register(prismaPlugin, {
    prisma: opts.prisma ?? prismaFromConfig(config),
    owned: !opts.prisma,
  });
  await app.register(cookie, { secret: config.SESSION_SECRET });
  await app.register(bodyParsers);
  const views = fileURLToPath(new URL("./views", import.meta.url));
  await app.register(view, {
    engine: { eta: new Eta({ views, cache: config.NODE_ENV === "production" }) },
    root: views,
    defaultContext: { demoModel: !config.LLM_BASE_URL && config.DEMO_FAKE_LLM },
  });
  await app.register(fastifyStatic, {
    root: fileURLToPath(new URL("../public", import.meta.url)),
    prefix: "/assets/",
  });
  // Browsers (and crawlers) ask for /favicon.ico whatever a page links: send them to the real icon.
  app.get("/favicon.ico", (_request, reply) => reply.redirect("/assets/favicon.svg", 301));
}

/** Live updates, errors, metrics, audit, then who is asking: tenancy before auth, auth before rate limits. */
async function registerAppPlugins(app: FastifyInstance, config: Config) {
  await app.register(live, {
    databaseUrl: config.DATABASE_URL,
    redisUrl: config.REDIS_URL,
    heartbeatMs: config.LIVE_HEARTBEAT_MS,
    maxAgeMs: config.LIVE_STREAM_MAX_SECONDS * 1000,
  });
  await app.register(errors);
  await app.register(metrics, { token: config.METRICS_TOKEN });
  await app.register(audit, {
    db: app.prisma,
    flushMs: config.AUDIT_FLUSH_MS,
    batchSize: config.AUDIT_BATCH_SIZE,
  });
  await app.register(tenancy, {
    baseDomain: config.BASE_DOMAIN,
    defaultWorkspace: config.DEFAULT_WORKSPACE,
    workspaceless: isSignupPath,
  });
  const secure = config.PUBLIC_SCHEME === "https";
  await app.register(auth, {
    secure,
    sessionSecret: config.SESSION_SECRET,
    sessionLimits: sessionLimitsOf(config),
    origin: config,
  });
  await app.register(rateLimit, {
    redisUrl: config.REDIS_URL,
    prefix: config.QUEUE_PREFIX,
    perToken: config.API_RATE_LIMIT_PER_TOKEN,
    perTenant: config.API_RATE_LIMIT_PER_TENANT,
    windowSeconds: config.API_RATE_LIMIT_WINDOW_SECONDS,
  });
}

/** The page routes last: every other route is more specific than their patterns. */
async function registerRoutes(app: FastifyInstance, config: Config) {
  const sessionLimits = sessionLimitsOf(config);
  await app.register(healthRoutes);
  await app.register(authRoutes, { sessionLimits, throttle: config, origin: config });
  await app.register(confirmRoutes);
  await app.register(secondStepRoutes, { throttle: config });
  await app.register(passwordResetRoutes, { sessionLimits, throttle: config, origin: config });
  await app.register(ssoRoutes, { sessionLimits, origin: config });
  await app.register(accountRoutes, { sessionLimits });
  await app.register(signupRoutes, {
    policy: signupPolicy(config.SIGNUP),
    sessionLimits,
    throttle: config,
    origin: config,
  });
  await app.register(invitationRoutes, { sessionLimits, throttle: config, origin: config });
  await app.register(usageCsvRoutes);
  await app.register(experimentCsvRoutes);
  await app.register(webhookRoutes, { scheme: config.PUBLIC_SCHEME });
  await app.register(mcpRoutes, { manage: config.MCP_MANAGE_ACTIONS });
  await app.register(secretRoutes);
  await app.register(notificationOpenRoutes);
  await app.register(mentionableRoutes);
  await app.register(toolSignInRoutes);
  await app.register(passkeyRoutes);
  await app.register(pageRoutes);
}
