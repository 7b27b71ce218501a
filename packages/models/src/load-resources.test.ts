// A load that fails part-way leaves nothing open: the checkpoint's file handles are closed and the sessions made
// before the failure are released (load-resources.ts), for both models.
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LoadResources } from './load-resources.js';
import { loadPretrained } from './registry.js';
import { FIXTURES } from './test-utils/fixtures.js';
import { loadFailure } from './test-utils/load-failure.js';

const work = mkdtempSync(join(tmpdir(), 'vlmkit-load-resources-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The files this process has open under `dir` (Linux: /proc/self/fd). */
function openFilesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) out.push(target);
    } catch {
      // closed between the listing and the read
    }
  }
  return out;
}

/** The files this process has memory-mapped under `dir` (Linux: /proc/self/maps): ORT maps the graph cache's weights. */
function mappedFilesUnder(dir: string): string[] {
  const files = readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .map((l) => l.split(/\s+/).slice(5).join(' '))
    .filter((f) => f.startsWith(dir));
  return [...new Set(files)];
}

const fake = () => {
  const log: string[] = [];
  const session = (name: string) => ({ session: { release: async () => void log.push(`release ${name}`) } });
  const checkpoint = { close: async () => void log.push('close checkpoint') } as never;
  return { log, session, checkpoint };
};

describe('LoadResources', () => {
  it('on failure closes the checkpoint and releases every session held so far', async () => {
    const { log, session, checkpoint } = fake();
    const held = new LoadResources();
    await expect(
      (async () => {
        try {
          held.checkpoint(checkpoint);
          held.session(session('vision'));
          held.session(session('decoder'));
          throw new Error('late failure');
        } finally {
          await held.dispose();
        }
      })(),
    ).rejects.toThrow('late failure');
    expect(log).toEqual(['close checkpoint', 'release vision', 'release decoder']);
  });

  it('on success closes the checkpoint once and keeps the sessions', async () => {
    const { log, session, checkpoint } = fake();
    const held = new LoadResources();
    held.checkpoint(checkpoint);
    held.session(session('vision'));
    await held.closeCheckpoint();
    held.keep();
    await held.dispose();
    expect(log).toEqual(['close checkpoint']);
  });

  it("a release that fails does not hide the load's own error or stop the other releases", async () => {
    const log: string[] = [];
    const held = new LoadResources();
    held.session({ session: { release: async () => Promise.reject(new Error('release failed')) } });
    held.session({ session: { release: async () => void log.push('second released') } });
    await held.dispose();
    expect(log).toEqual(['second released']);
  });
});

describe.runIf(process.platform === 'linux')('a failed load leaves no file open', () => {
  for (const name of ['ernie-tiny', 'granite-tiny']) {
    it(`${name}: bfloat16 on the CPU EP (NO_KERNEL at session creation) closes the checkpoint's files`, async () => {
      const dir = join(FIXTURES, name);
      expect(openFilesUnder(dir)).toEqual([]);
      const err = await loadFailure(dir, { device: 'cpu', cacheDir: join(work, name), dtype: 'bfloat16' });
      expect((err as { code?: string }).code).toBe('NO_KERNEL');
      expect(openFilesUnder(dir)).toEqual([]);
    });

    it(`${name}: a load failing after both sessions were made releases them (their mapped weights)`, async () => {
      const dir = join(FIXTURES, name);
      const cacheDir = join(work, `${name}-vs`);
      // A successful load maps the cached graphs' weights while its sessions live: what the check below looks for.
      const ok = await loadPretrained(dir, { device: 'cpu', cacheDir });
      expect(mappedFilesUnder(cacheDir).length).toBeGreaterThan(0);
      await ok.release();
      expect(mappedFilesUnder(cacheDir)).toEqual([]);
      // The last progress report comes once both sessions exist: a callback that throws there fails the load late.
      const onProgress = (p: { done: number; total: number }) => {
        if (p.done === p.total) throw new Error('the progress callback failed');
      };
      const err = await loadFailure(dir, { device: 'cpu', cacheDir, onProgress });
      expect((err as Error).message).toBe('the progress callback failed');
      expect(openFilesUnder(dir)).toEqual([]);
      expect(mappedFilesUnder(cacheDir)).toEqual([]);
    });
  }
});
