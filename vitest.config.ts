import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Multi-process and crash tests spawn their own children; keep the fork count at the core count.
    maxWorkers: 2,
  },
});
