import { configDefaults, defineConfig } from "vitest/config";

// ERRAND_STORES=sqlite,postgres,redis,redis-cluster picks the stores under test (default: all). The conformance,
// process and e2e suites read it themselves; the store-specific integration folders are left out
// here when their store is not picked, so `ERRAND_STORES=sqlite npm test` needs no servers.
const stores = process.env.ERRAND_STORES?.split(",")
  .map((s) => s.trim())
  .filter(Boolean);
const skipped = stores && stores.length > 0 ? ["postgres", "redis"].filter((s) => !stores.includes(s)) : [];

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, ...skipped.map((s) => `test/integration/${s}/**`)],
    globalSetup: ["test/setup/global.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Multi-process and crash tests spawn their own children; keep the fork count at the core count.
    maxWorkers: 2,
  },
});
