import { describe, expect, it } from 'vitest';
import { ModelError } from './errors.js';
import { ensureMemory } from './memory-check.js';
import { memAvailable } from './session-cache.node.js';

const MEMINFO = `MemTotal:       24683748 kB
MemFree:        13897352 kB
MemAvailable:   21078348 kB
Buffers:          123456 kB
`;

describe('memory check before a session', () => {
  it('reads MemAvailable from /proc/meminfo text (kB), undefined when absent', async () => {
    expect(await memAvailable(MEMINFO)).toBe(21078348 * 1024);
    expect(await memAvailable('MemTotal: 1 kB\n')).toBeUndefined();
  });

  it('refuses a graph larger than the available memory with INSUFFICIENT_MEMORY naming both sizes', () => {
    const GiB = 2 ** 30;
    expect(() => ensureMemory('granite-decoder', 15.9 * GiB, 16 * GiB, '/c/m.onnx')).not.toThrow();
    let err: unknown;
    try {
      ensureMemory('granite-decoder', 15.9 * GiB, 7.25 * GiB, '/c/m.onnx');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).code).toBe('INSUFFICIENT_MEMORY');
    expect((err as ModelError).message).toMatch(/'granite-decoder' needs at least 15\.90 GiB .* but 7\.25 GiB of memory is available/);
  });
});
