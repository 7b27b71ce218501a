/**
 * Fuzzing the reader and the sharded index loader with a deterministic corpus
 * of mutated fixture checkpoints (test-utils/fuzz-corpus.ts): every case must
 * end in a typed error (a known code, a message naming the file and what was
 * expected) or a read that agrees with an independent oracle, within the
 * per-case time bound and with live memory bounded by the case's own bytes
 * (never by a size a header lies about).
 *
 * `pnpm test` runs a sample (every 200th case of the 10,000: 50 cases, a few seconds); `pnpm fuzz` at
 * the repository root runs them all (VLMKIT_FUZZ=full) and prints the counts.
 * VLMKIT_FUZZ_CASES=N and VLMKIT_FUZZ_SEED=S choose another corpus.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { tempDir } from './test-utils/files.js';
import { assemble } from './test-utils/fuzz-corpus.js';
import { DEFAULT_BOUNDS, fixtureBases, runCase, runCorpus, type Summary } from './test-utils/fuzz-runner.js';
import { caseAt } from './test-utils/fuzz-shards.js';

const FULL = process.env['VLMKIT_FUZZ'] === 'full';
const SEED = Number(process.env['VLMKIT_FUZZ_SEED'] ?? 20261130);
const CASES = Number(process.env['VLMKIT_FUZZ_CASES'] ?? 10_000);
const STEP = FULL ? 1 : 200;

function report(s: Summary): string {
  const lines = [
    `fuzz corpus: seed ${SEED}, cases 0..${CASES - 1}${STEP > 1 ? ` every ${STEP}th` : ''}: ${s.cases} cases in ${(s.totalMs / 1000).toFixed(1)} s`,
    ...Object.entries(s.byCategory).map(([c, v]) => `  ${c}: ${v.cases} cases, ${v.clean} clean, max ${v.maxMs.toFixed(0)} ms per case`),
    `  max per-case time ${s.maxMs.toFixed(0)} ms (case ${s.slowest.id}: ${s.slowest.kind} -> ${s.slowest.result})`,
    `  max live ArrayBuffer growth in a case ${(s.maxExtraBytes / 2 ** 20).toFixed(1)} MiB; peak RSS growth ${(s.peakRssGrowth / 2 ** 20).toFixed(0)} MiB`,
    '  outcomes:',
    ...Object.entries(s.outcomes).map(([k, n]) => `    ${k}: ${n}`),
    ...s.bugs.slice(0, 20).map((b) => `  BUG case ${b.id} (${b.kind}): ${b.result} ${b.detail ?? ''}`),
  ];
  return lines.join('\n');
}

describe(`safetensors fuzz (${FULL ? 'full corpus' : 'CI sample'})`, () => {
  it('the corpus is deterministic: a case is the same bytes every time', () => {
    const bases = fixtureBases();
    for (const i of [0, 1, 7, 4242, 9999]) {
      const a = caseAt(bases, SEED, i);
      const b = caseAt(bases, SEED, i);
      expect(a.kind).toBe(b.kind);
      const digest = (c: typeof a) => c.files.map((f) => [f.path, f.bytes && createHash('sha256').update(f.bytes).digest('hex')]);
      expect(digest(a)).toEqual(digest(b));
    }
    // And the corpus varies: 60 cases hold many kinds of mutation.
    const kinds = new Set(Array.from({ length: 60 }, (_, i) => caseAt(bases, SEED, i).kind.split(':')[1]));
    expect(kinds.size).toBeGreaterThan(15);
  });

  it(
    'every case ends in a typed error or a correct read, in bounded time and memory',
    async () => {
      const summary = await runCorpus({ seed: SEED, to: CASES, step: STEP });
      console.log(report(summary));
      expect(summary.bugs.map((b) => `${b.id} ${b.kind}: ${b.result} ${b.detail ?? ''}`)).toEqual([]);
      // Both outcomes occur, and most cases exercise a rejection path.
      expect(Object.keys(summary.outcomes).some((k) => k.endsWith(' read'))).toBe(true);
      expect(summary.cases).toBe(Math.ceil(CASES / STEP));
    },
    FULL ? 3_600_000 : 120_000,
  );

  it.runIf(FULL)(
    'a header just under the 100 MB cap (valid: 99 MB of padding) reads correctly in under 30 s',
    async () => {
      const base = fixtureBases().find((b) => b.name === 'granite-tiny-lora')!;
      const text = new TextDecoder().decode(base.bytes.subarray(8, 8 + base.headerLength));
      const padded = assemble(text + ' '.repeat(99_000_000 - text.length), base.bytes.subarray(8 + base.headerLength));
      const outcome = await runCase(
        {
          id: -1,
          category: 'file',
          kind: 'padding-99MB',
          files: [{ path: 'model.safetensors', bytes: padded }],
          open: 'model.safetensors',
          same: base,
        },
        await tempDir(),
        { ...DEFAULT_BOUNDS, ms: 30_000 },
      );
      console.log(`99 MB header: ${outcome.result} in ${outcome.ms.toFixed(0)} ms, ${(outcome.extraBytes / 2 ** 20).toFixed(0)} MiB live`);
      expect(outcome.result).toBe('read');
    },
    120_000,
  );
});
