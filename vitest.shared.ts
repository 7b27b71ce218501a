import type { ViteUserConfig } from 'vitest/config';

/**
 * Test settings shared by every package. Workspace packages resolve to their
 * TypeScript sources (the `@vlmkit/source` export condition), so tests never
 * run against a stale dist/. Each package writes a JSON report that `.ci/run`
 * sums into its `N passed, M failed` line.
 */
export const sharedTestConfig: ViteUserConfig = {
  resolve: { conditions: ['@vlmkit/source'] },
  ssr: { resolve: { conditions: ['@vlmkit/source'], externalConditions: ['@vlmkit/source'] } },
  test: {
    include: ['src/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  },
};
