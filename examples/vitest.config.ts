import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

// The examples live at this package's root, not in src/.
export default defineConfig({ ...sharedTestConfig, test: { ...sharedTestConfig.test, include: ['*.test.ts'] } });
