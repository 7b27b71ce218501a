#!/usr/bin/env node
// prepack: puts the tiny ERNIE-4.5-VL checkpoint and the demo picture into packages/cli/demo/, so that an
// installed `vlmkit demo` has them (a checkout reads test-fixtures/ directly). The reference dumps under
// cases/ are test data, not part of the checkpoint, and stay out. postpack runs it with --remove: a checkout
// keeps reading test-fixtures/.
import { cpSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURES = join(CLI, '../../test-fixtures');
const OUT = join(CLI, 'demo');

rmSync(OUT, { recursive: true, force: true });
if (process.argv.includes('--remove')) process.exit(0);
cpSync(join(FIXTURES, 'ernie-tiny'), join(OUT, 'ernie-tiny'), {
  recursive: true,
  filter: (src) => basename(src) !== 'cases',
});
cpSync(join(FIXTURES, 'processors/images/photo.jpg'), join(OUT, 'photo.jpg'));
