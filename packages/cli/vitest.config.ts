import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// The hostile-*.test.ts files run the built command (dist/bin.js) as a child process: it is rebuilt first when stale.
export default defineConfig({ ...sharedTestConfig, test: { ...sharedTestConfig.test, globalSetup: ['./src/test-utils/build-bin.ts'] } });
