// The layers of src/, bottom to top (../shared/DESIGN.md, "Layers"; docs/architecture.md, "Layers"):
//
//   lib, config.ts                          plain helpers and the env schema
//   db/, metrics/                           connections and counters
//   services/live/, services/events-channel.ts   the Postgres channel live pages listen on
//   services/registry/                      what a page and an action are, and running them
//   domain services                         services/*.ts, money/, tools/, agents/{core,prompt,policy,triggers,automations}/
//   services/pages/, services/actions/      the workspace's pages and actions
//   services/catalog/                       every page and action in one registry; the markdown API; MCP tools
//   services/agents/runtime/                the run loop: an agent acting through the catalog
//   http/, plugins/, routes/, jobs/         adapters: HTTP in, queues in
//   app.ts, server.ts, worker.ts, cli/, dev/   entry points
//
// Imports point down. Each rule names the boundary it holds and why; `npm run check:layers`
// (and so `npm run check` and CI) fails on any of them.

const ENTRIES = "^src/(app|server|worker)\\.ts$|^src/(cli|dev)/";
const ADAPTERS = "^src/(http|plugins|routes|jobs)/";
const RUNTIME = "^src/services/agents/runtime/";
const CATALOG = "^src/services/catalog/";
const PAGES = "^src/services/(pages|actions)/";
const REGISTRY = "^src/services/registry/";
const LIVE = "^src/services/(live/|events-channel\\.ts$)";
const INFRA = "^src/(db|metrics)/";
const LIB = "^src/(lib/|config\\.ts$)";
const GENERATED = "^src/generated/";
const DOMAIN = "^src/services/(agents/(core|prompt|policy|triggers|automations)/|money/|reach/|accounts/|tools/|(?!events-channel)[^/]+\\.ts$)";

const above = (...layers) => ({ path: layers.join("|") });

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment:
        "A cycle makes load order decide whether a module sees its imports (one broke a test file at load in CI) and ties every file in it to every other: break it by moving the shared piece down a layer.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "lib-is-the-bottom",
      severity: "error",
      comment:
        "lib/ and config.ts are read by everything, so they import nothing of ours but each other: a constant a service needs from the schema lives here, and the service reads it.",
      from: { path: LIB },
      to: { path: "^src/", pathNot: `${LIB}|${GENERATED}` },
    },
    {
      name: "infra-below-services",
      severity: "error",
      comment:
        "db/ and metrics/ are connections and counters: they know nothing of pages, agents or money, so any layer can use them without pulling the domain in.",
      from: { path: INFRA },
      to: { path: "^src/", pathNot: `${LIB}|${GENERATED}|${INFRA}` },
    },
    {
      name: "live-below-registry",
      severity: "error",
      comment: "The live channel (LISTEN/NOTIFY) is plumbing the registry's pages stream from: it knows no page.",
      from: { path: LIVE },
      to: { path: "^src/", pathNot: `${LIB}|${GENERATED}|${INFRA}|${LIVE}` },
    },
    {
      name: "registry-knows-no-domain",
      severity: "error",
      comment:
        "The registry defines what a page and an action are and runs them; the domain registers into it. A registry that imported a page or a service would be a cycle waiting to happen.",
      from: { path: REGISTRY },
      to: { path: "^src/", pathNot: `${LIB}|${GENERATED}|${INFRA}|${LIVE}|${REGISTRY}` },
    },
    {
      name: "domain-below-pages",
      severity: "error",
      comment:
        "Domain services (agents, money, notifications, access) are what pages and actions call; they never render a page or reach the catalog. Something a page and a service both need belongs in the service.",
      from: { path: DOMAIN },
      to: above(PAGES, CATALOG, RUNTIME, ADAPTERS, ENTRIES),
    },
    {
      name: "pages-below-catalog",
      severity: "error",
      comment:
        "The catalog lists every page and action, so a page or action that imported it would import itself. One that needs another action's definition reads ctx.actionDefs, which the registry hands it.",
      from: { path: PAGES },
      to: above(CATALOG, RUNTIME, ADAPTERS, ENTRIES),
    },
    {
      name: "catalog-below-runtime",
      severity: "error",
      comment: "The catalog serves every actor; the run loop is one of its clients, like HTTP and MCP.",
      from: { path: CATALOG },
      to: above(RUNTIME, ADAPTERS, ENTRIES),
    },
    {
      name: "runtime-below-adapters",
      severity: "error",
      comment: "The run loop is driven by jobs and knows no queue, route or plugin: it can be run and tested in process.",
      from: { path: RUNTIME },
      to: above(ADAPTERS, ENTRIES),
    },
    {
      name: "adapters-below-entries",
      severity: "error",
      comment: "Routes, plugins and jobs are assembled by app.ts and worker.ts, never the other way round.",
      from: { path: ADAPTERS },
      to: above(ENTRIES),
    },
    {
      name: "agent-core-is-shared",
      severity: "error",
      comment:
        "agents/core (who manages an agent, its settings, runs and steps) is what every other agent folder builds on, so it imports none of them.",
      from: { path: "^src/services/agents/core/" },
      to: { path: "^src/services/agents/(prompt|policy|triggers|automations|runtime)/" },
    },
    {
      name: "agent-prompt-is-pure",
      severity: "error",
      comment: "The prompt is built from what a run read and remembered; it decides nothing and wakes nothing.",
      from: { path: "^src/services/agents/prompt/" },
      to: { path: "^src/services/agents/(policy|triggers|automations|runtime)/" },
    },
    {
      name: "agent-policy-stands-alone",
      severity: "error",
      comment: "Capabilities, rules and approvals judge an action; they neither build prompts nor start runs.",
      from: { path: "^src/services/agents/policy/" },
      to: { path: "^src/services/agents/(prompt|triggers|automations|runtime)/" },
    },
    {
      name: "agent-triggers-below-automations",
      severity: "error",
      comment:
        "Every way an agent wakes goes through the one dispatcher (triggers/); automations (schedules, subscriptions, webhooks) call it, never the reverse.",
      from: { path: "^src/services/agents/triggers/" },
      to: { path: "^src/services/agents/(prompt|policy|automations|runtime)/" },
    },
    {
      name: "agent-automations-queue-not-run",
      severity: "error",
      comment: "An automation queues a run through the dispatcher; it never runs one or judges its actions.",
      from: { path: "^src/services/agents/automations/" },
      to: { path: "^src/services/agents/(prompt|policy|runtime)/" },
    },
    {
      name: "no-orphan-src",
      severity: "error",
      comment: "A module nothing imports and that is no entry point is dead code.",
      from: { orphan: true, path: "^src/", pathNot: `${ENTRIES}|${GENERATED}|\\.d\\.ts$|^src/jobs/relay-thread\\.ts$` },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^src/generated/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js", ".mjs"] },
  },
};
