// A checkpoint or adapter file that is not a regular file (a FIFO, a device behind a symlink) is refused by
// name at once: opening a FIFO blocks until a writer appears and /dev/zero never ends, so before, `run`,
// `inspect` and `export` hung on a config.json FIFO (issue 16). Each case copies a fixture, puts the special
// file in place of one file, and loads. A writer opens the FIFO after WRITER_MS so that a regression ends
// (late, and so fails the time bound) instead of hanging the run.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURES } from './test-utils/fixtures.js';
import { loadFailure } from './test-utils/load-failure.js';

const WRITER_MS = 15_000;
const BOUND_MS = 10_000;

const work = mkdtempSync(join(tmpdir(), 'vlmkit-special-files-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function copyFixture(name: string, tag: string): string {
  const dir = join(work, `${name}-${tag}`);
  cpSync(join(FIXTURES, name), dir, { recursive: true });
  return dir;
}

/** Replaces `path` by a FIFO; a writer opens (and closes) it after WRITER_MS, unblocking a reader that waits. */
async function fifoInPlaceOf(path: string): Promise<() => void> {
  rmSync(path, { force: true });
  await new Promise<void>((ok, ko) => spawn('mkfifo', [path]).on('exit', (c) => (c === 0 ? ok() : ko(new Error(`mkfifo ${c}`)))));
  const writer = setTimeout(() => spawn('sh', ['-c', `exec 3>"${path}"; sleep 1`], { stdio: 'ignore' }).unref(), WRITER_MS);
  return () => clearTimeout(writer);
}

async function timedFailure(dir: string, options: Parameters<typeof loadFailure>[1] = {}) {
  const t0 = performance.now();
  const err = (await loadFailure(dir, { device: 'cpu', cacheDir: join(work, 'cache'), ...options })) as Error & { code?: string };
  return { err, ms: performance.now() - t0 };
}

describe.skipIf(process.platform === 'win32')('checkpoint files that are not regular files', () => {
  for (const file of ['config.json', 'generation_config.json', 'model.safetensors']) {
    it(`a FIFO as ${file} is refused by name at once, never waited on`, { timeout: 40_000 }, async () => {
      const dir = copyFixture('ernie-tiny', file);
      const cancel = await fifoInPlaceOf(join(dir, file));
      try {
        const { err, ms } = await timedFailure(dir);
        expect(err).toBeInstanceOf(Error);
        expect(err.message).toContain(file);
        expect(err.message).toMatch(/FIFO|regular file/);
        expect(ms).toBeLessThan(BOUND_MS);
      } finally {
        cancel();
      }
    });
  }

  it('a model.safetensors that is a symlink to /dev/zero is refused by name, not read', { timeout: 40_000 }, async () => {
    const dir = copyFixture('ernie-tiny', 'dev-zero');
    rmSync(join(dir, 'model.safetensors'));
    symlinkSync('/dev/zero', join(dir, 'model.safetensors'));
    const { err, ms } = await timedFailure(dir);
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toContain('model.safetensors');
    expect(err.message).toMatch(/device|regular file/);
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it('an adapter_config.json that is a FIFO is refused by name at once', { timeout: 40_000 }, async () => {
    const adapter = copyFixture('granite-tiny-lora', 'fifo');
    const cancel = await fifoInPlaceOf(join(adapter, 'adapter_config.json'));
    try {
      const { err, ms } = await timedFailure(join(FIXTURES, 'granite-tiny'), { adapter });
      expect(err).toBeInstanceOf(Error);
      expect(err.message).toContain('adapter_config.json');
      expect(err.message).toMatch(/FIFO|regular file/);
      expect(ms).toBeLessThan(BOUND_MS);
    } finally {
      cancel();
    }
  });
});
