import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeFileKind } from './regular-file.js';

// One wording for what a path is, shared by every package that refuses a path that is not a regular file.
describe('describeFileKind', () => {
  it('names a regular file, a directory, a symbolic link, a FIFO and a character device', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vlmkit-kind-'));
    const file = join(dir, 'f');
    writeFileSync(file, 'x');
    mkdirSync(join(dir, 'd'));
    symlinkSync(file, join(dir, 'l'));
    execFileSync('mkfifo', [join(dir, 'p')]);
    expect(describeFileKind(statSync(file))).toBe('a regular file');
    expect(describeFileKind(statSync(join(dir, 'd')))).toBe('a directory');
    expect(describeFileKind(lstatSync(join(dir, 'l')))).toBe('a symbolic link');
    expect(describeFileKind(statSync(join(dir, 'p')))).toBe('a FIFO (named pipe)');
    expect(describeFileKind(statSync('/dev/null'))).toBe('a character device');
  });
});
