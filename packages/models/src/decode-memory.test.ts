import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type HostTensor, hostTensor } from '@vlmkit/runtime';
import { describe, expect, it } from 'vitest';
import { Ernie45VL } from './ernie/model.js';
import { FIXTURE_DIR } from './fixture-dir.js';

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

function rssMiB(): number {
  gc();
  return process.memoryUsage.rss() / 2 ** 20;
}

/** A text-only ERNIE request of `n` tokens (ids below the tiny vocab, no image tokens). */
function textRequest(n: number): { input_ids: HostTensor } & Record<string, HostTensor> {
  const ids = BigInt64Array.from({ length: n }, (_, i) => BigInt(3 + ((i * 37) % 90)));
  const zeros = new BigInt64Array(n);
  return {
    input_ids: hostTensor('int64', ids, [1, n]),
    attention_mask: hostTensor(
      'int64',
      zeros.map(() => 1n),
      [1, n],
    ),
    mm_token_type_ids: hostTensor('int64', zeros, [1, n]),
    moe_mm_token_type_ids: hostTensor('int64', zeros, [1, n]),
  };
}

describe('decode memory', () => {
  // Every decode step has a new past length, so every step's shapes are new to ORT. ORT's memory pattern
  // cached one plan per shape set: +~46 KB of RSS per step, never returned (issue 10). Steps at context
  // lengths never seen before must not grow the process.
  it('500 decode steps at new context lengths leave RSS flat (no per-shape state kept)', async () => {
    const model = await Ernie45VL.fromPretrained(join(FIXTURE_DIR, 'ernie-tiny'), { device: 'cpu', threads: 1 });
    try {
      const steps = 500;
      // Warm-up: the arena's prefill buffers for the long prompt, then steps at other lengths (JIT, arena).
      await model.generate(textRequest(612), { maxNewTokens: 2, eos: [] });
      await model.generate(textRequest(12), { maxNewTokens: steps, eos: [] });
      const before = rssMiB();
      // Past lengths 612 .. 1111: none of them seen in the warm-up.
      const { tokens } = await model.generate(textRequest(612), { maxNewTokens: steps, eos: [] });
      const grown = rssMiB() - before;
      console.info(`rss ${before.toFixed(1)} -> ${(before + grown).toFixed(1)} MiB`);
      expect(tokens[0]).toHaveLength(steps);
      // KV cache at 1111 positions: 4 layers x 2 x 2 heads x 16 x 4 B = 0.5 KB/position, ~0.6 MiB.
      // With the memory pattern on this grew by ~22 MiB.
      expect(grown).toBeLessThan(12);
    } finally {
      await model.release();
    }
  }, 120_000);

  it('an aborted generate stops within one step and keeps nothing: 20 aborted runs leave RSS flat', async () => {
    const model = await Ernie45VL.fromPretrained(join(FIXTURE_DIR, 'ernie-tiny'), { device: 'cpu', threads: 1 });
    try {
      const aborted = async (at: number): Promise<number> => {
        const controller = new AbortController();
        const onToken = (_t: readonly number[], step: number) => {
          if (step === at) controller.abort();
        };
        const { tokens } = await model.generate(textRequest(600), { maxNewTokens: 5000, eos: [], onToken, signal: controller.signal });
        return tokens[0]!.length;
      };
      expect(await aborted(4)).toBe(5); // the step that saw the abort is the last
      const before = rssMiB();
      for (let i = 0; i < 20; i++) expect(await aborted(10 + i)).toBe(11 + i);
      expect(rssMiB() - before).toBeLessThan(12);
    } finally {
      await model.release();
    }
  }, 120_000);
});
