import { describe, expect, it } from 'vitest';
import { createSession } from './session.js';
import { bool, type HostTensor, hostTensor, int64 } from './tensor.js';
import { type ElemType, identityModel } from './test-utils/onnx-models.js';

async function throughIdentity(type: ElemType, t: HostTensor): Promise<HostTensor> {
  const s = await createSession(identityModel(type, t.dims.length), { device: 'cpu', name: `identity_${type}` });
  try {
    const out = await s.run({ x: t });
    return out.y!;
  } finally {
    await s.release();
  }
}

describe('dtype round trips through an ORT session', () => {
  it('int64, including values beyond 2^53', async () => {
    const t = int64([0n, -1n, 2n ** 62n + 1n, -(2n ** 63n), 2n ** 63n - 1n, 7n], [2, 3]);
    const back = await throughIdentity('int64', t);
    expect(back.dtype).toBe('int64');
    expect(back.dims).toEqual([2, 3]);
    expect(back.data).toEqual(t.data);
    expect(back.data).not.toBe(t.data);
  });

  it('float16 keeps the exact bits (incl. -0, subnormal, inf, NaN)', async () => {
    const bits = Uint16Array.from([0x3c00, 0x8000, 0x0001, 0x7c00, 0xfbff, 0x7e00]);
    const back = await throughIdentity('float16', hostTensor('float16', bits, [3, 2]));
    expect(back.dtype).toBe('float16');
    expect(back.data).toBeInstanceOf(Uint16Array);
    expect(Array.from(back.data as Uint16Array)).toEqual(Array.from(bits));
  });

  it('bool', async () => {
    const back = await throughIdentity('bool', bool([true, false, false, true], [2, 2]));
    expect(back.dtype).toBe('bool');
    expect(Array.from(back.data as Uint8Array)).toEqual([1, 0, 0, 1]);
  });

  it('int32 and uint8', async () => {
    const i32 = await throughIdentity('int32', hostTensor('int32', Int32Array.from([-(2 ** 31), 2 ** 31 - 1]), [1, 2]));
    expect(Array.from(i32.data as Int32Array)).toEqual([-(2 ** 31), 2 ** 31 - 1]);
    const u8 = await throughIdentity('uint8', hostTensor('uint8', Uint8Array.from([0, 255]), [2, 1]));
    expect(Array.from(u8.data as Uint8Array)).toEqual([0, 255]);
  });

  it('empty tensors', async () => {
    const back = await throughIdentity('int64', int64([], [0, 3]));
    expect(back.dims).toEqual([0, 3]);
    expect(back.data.length).toBe(0);
  });
});
