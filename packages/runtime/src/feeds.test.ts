import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RuntimeError } from './errors.js';
import { createSession, type VlmSession } from './session.js';
import { bool, float32, hostTensor, int64 } from './tensor.js';
import { impossibleReshapeModel, twoInputModel } from './test-utils/onnx-models.js';

let s: VlmSession;
beforeAll(async () => {
  s = await createSession(twoInputModel(), { device: 'cpu', name: 'embed' });
});
afterAll(async () => s.release());

async function feedError(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(RuntimeError);
    expect((e as RuntimeError).code).toBe('INVALID_FEEDS');
    expect((e as RuntimeError).session).toBe('embed');
    return (e as RuntimeError).message;
  }
  throw new Error('expected INVALID_FEEDS');
}

const ids = int64([3, 4, 5], [1, 3]);
const mask = bool([true, false, true], [1, 3]);

describe('feed validation', () => {
  it('runs valid int64 + bool feeds', async () => {
    const out = await s.run({ input_ids: ids, attention_mask: mask });
    expect(Array.from(out.out!.data as Float32Array)).toEqual([3, 0, 5]);
  });

  it('names a missing input with its expected type and shape', async () => {
    expect(await feedError(s.run({ input_ids: ids }))).toBe(
      "Session 'embed': missing input 'attention_mask' (bool [batch, seq]). The model's inputs are: input_ids, attention_mask.",
    );
  });

  it('names an unknown input and lists the real ones', async () => {
    expect(await feedError(s.run({ input_ids: ids, attention_mask: mask, pixel_values: float32([1], [1]) }))).toBe(
      "Session 'embed': unknown input 'pixel_values'. The model's inputs are: input_ids, attention_mask.",
    );
  });

  it('catches a dtype mismatch against the metadata', async () => {
    const wrong = hostTensor('int32', Int32Array.from([3, 4, 5]), [1, 3]);
    expect(await feedError(s.run({ input_ids: wrong, attention_mask: mask }))).toContain(
      "input 'input_ids' is int32 but the model expects int64",
    );
  });

  it('catches a rank mismatch', async () => {
    expect(await feedError(s.run({ input_ids: int64([3, 4, 5], [3]), attention_mask: mask }))).toContain(
      "input 'input_ids' has rank 1 [3] but the model expects rank 2 [batch, seq]",
    );
  });

  it('refuses a symbolic dim with two sizes, naming both inputs (one dim_param is one size)', async () => {
    const shortMask = bool([true, false], [1, 2]);
    expect(await feedError(s.run({ input_ids: ids, attention_mask: shortMask }))).toBe(
      "Session 'embed': input 'attention_mask' has dims [1, 2] but seq is 3 in input 'input_ids' ([batch, seq], axis 1). The model's inputs are: input_ids, attention_mask.",
    );
    const twoRows = bool([true, false, true, true, true, true], [2, 3]);
    expect(await feedError(s.run({ input_ids: ids, attention_mask: twoRows }))).toContain("but batch is 1 in input 'input_ids'");
  });

  it('reports every problem at once', async () => {
    const msg = await feedError(s.run({ input_ids: float32([1, 2, 3], [1, 3]), extra: ids }));
    expect(msg).toContain("unknown input 'extra'");
    expect(msg).toContain("input 'input_ids' is float32 but the model expects int64");
    expect(msg).toContain("missing input 'attention_mask'");
  });

  it('catches a malformed host tensor before ORT does', async () => {
    const bad = { dtype: 'int64', dims: [2, 3], data: BigInt64Array.from([1n]) } as const;
    expect(await feedError(s.run({ input_ids: bad, attention_mask: mask }))).toContain(
      "input 'input_ids': int64 tensor: dims [2, 3] hold 6 elements but data has 1",
    );
  });

  it('fetches only the requested outputs and refuses unknown ones', async () => {
    const out = await s.run({ input_ids: ids, attention_mask: mask }, { outputs: ['out'] });
    expect(Object.keys(out)).toEqual(['out']);
    expect(await feedError(s.run({ input_ids: ids, attention_mask: mask }, { outputs: ['logits'] }))).toBe(
      "Session 'embed': unknown output(s) 'logits'; the model's outputs are: out.",
    );
  });
});

describe('fixed dims', () => {
  it('catches a fixed-dim mismatch', async () => {
    const r = await createSession(impossibleReshapeModel(), { device: 'cpu', name: 'r' });
    try {
      await expect(r.run({ x: float32(new Float32Array(6), [2, 3]) })).rejects.toThrow(
        "Session 'r': input 'x' has dims [2, 3] but the model expects [n, 4] (axis 1).",
      );
    } finally {
      await r.release();
    }
  });
});
