// Node's dirFiles: a model directory by relative name, only regular files inside it (also after symlinks).
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { dirFiles, readTextFile } from './index.js';
import { rejection, tempDir } from './test-utils/files.js';

describe('dirFiles', () => {
  let root: string;
  let dir: string;
  beforeAll(async () => {
    root = await tempDir();
    dir = join(root, 'model');
    await mkdir(join(dir, 'sub'), { recursive: true });
    await writeFile(join(dir, 'config.json'), '{"a":1}');
    await writeFile(join(dir, 'sub', 'x.json'), '[]');
    await writeFile(join(root, 'secret.json'), '"outside"');
    await symlink(join(root, 'secret.json'), join(dir, 'escape.json'));
    await symlink(join(dir, 'config.json'), join(dir, 'alias.json'));
    await symlink(join(dir, 'nowhere.json'), join(dir, 'dangling.json'));
  });

  it('opens regular files by relative name; a file source has its path and a dev:ino:size:mtime stamp', async () => {
    const files = dirFiles(dir);
    expect(files.root).toBe(dir);
    const src = await files.open('./config.json');
    expect([src?.name, src?.path, src?.size]).toEqual([join(dir, 'config.json'), join(dir, 'config.json'), 7]);
    expect(src?.stamp).toMatch(/^\d+:\d+:7:\d+$/);
    await src?.close();
    expect((await rejection(src!.read(0, 1))).code).toBe('FILE_CLOSED');
    expect(await readTextFile(files, 'sub/x.json')).toBe('[]');
    expect(await readTextFile(files, 'alias.json')).toBe('{"a":1}'); // a link inside the directory is fine
    expect(await files.open('absent.json')).toBeUndefined();
    expect(await files.list?.()).toEqual(['alias.json', 'config.json', 'dangling.json', 'escape.json', 'sub']);
  });

  it('refuses what is not a regular file inside the directory, by name', async () => {
    const files = dirFiles(dir);
    const linkOut = await rejection(files.open('escape.json'));
    expect([linkOut.code, linkOut.file]).toEqual(['FILE_OUTSIDE_DIR', join(dir, 'escape.json')]);
    expect(linkOut.message).toContain(`'escape.json' is a symlink to ${join(root, 'secret.json')}, outside it`);
    for (const bad of ['../secret.json', '/etc/passwd', 'sub/../../secret.json']) {
      expect((await rejection(files.open(bad))).code, bad).toBe('FILE_OUTSIDE_DIR');
    }
    const dangling = await rejection(files.open('dangling.json'));
    expect([dangling.code, dangling.message]).toEqual([
      'NOT_A_FILE',
      `${join(dir, 'dangling.json')}: expected a regular file, found a symbolic link to nothing; only regular files are read.`,
    ]);
    expect((await rejection(files.open('sub'))).message).toContain('found a directory');
  });
});
