import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    setupFiles: ["test/file-database.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: files run in parallel forks, each on its own tenants and queue names.
    pool: "forks",
    maxWorkers: 2,
  },
});
