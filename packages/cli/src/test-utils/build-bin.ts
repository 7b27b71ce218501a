// vitest globalSetup: the child-process tests run packages/cli/dist/bin.js, so it is rebuilt first when a
// source file is newer than it (turbo's test task builds the dependencies, not this package).
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const src = join(root, 'src');
  const bin = join(root, 'dist', 'bin.js');
  const built = (() => {
    try {
      return statSync(bin).mtimeMs;
    } catch {
      return 0;
    }
  })();
  const newest = Math.max(
    ...readdirSync(src)
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .map((f) => statSync(join(src, f)).mtimeMs),
  );
  if (newest <= built) return;
  const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
}
