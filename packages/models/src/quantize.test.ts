// Quantized decoders (fromPretrained({ quantize })): they run on both tiny fixtures, stay near float32, compute
// exactly what float32 computes on the dequantized weights, and get graph-cache entries of their own.
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { everyNode, onnx, type QuantizeRequest, quantizeBlockwise } from '@vlmkit/onnx-graph';
import type { HostTensor } from '@vlmkit/runtime';
import { Checkpoint, type Tensor, writeSafetensors } from '@vlmkit/safetensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPretrained } from './registry.js';
import { agreement, FIXTURES, readTensors, relError } from './test-utils/fixtures.js';

/** The decoder's Linear weights in the HF checkpoint (what the quantized graph reads, before q/k/v and gate/up fusion). */
const DECODER_LINEAR = /^model\.(language_model\.)?layers\.\d+\..*_proj\.weight$/;

/**
 * Dequantizes MatMulNBits blocks as ORT's contrib op spec reads them (independently of the quantizer's packing
 * code): code i of a row is bits [i*bits, (i+1)*bits) of the row's bytes, low first; zero points per row,
 * padded to a byte, 2^(bits-1) when absent.
 */
function dequantize(q: ReturnType<typeof quantizeBlockwise>, n: number, k: number, bits: number, block: number): Float32Array {
  const kBlocks = Math.ceil(k / block);
  const code = (bytes: Uint8Array, base: number, i: number) =>
    bits === 8 ? bytes[base + i]! : (bytes[base + (i >> 1)]! >> ((i & 1) * 4)) & 15;
  const out = new Float32Array(n * k);
  for (let r = 0; r < n; r++) {
    for (let i = 0; i < k; i++) {
      const b = Math.floor(i / block);
      const zp = q.zeroPoints ? code(q.zeroPoints, r * Math.ceil((kBlocks * bits) / 8), b) : 2 ** (bits - 1);
      out[r * k + i] = (code(q.packed, (r * kBlocks * block * bits) / 8, i) - zp) * q.scales[r * kBlocks + b]!;
    }
  }
  return out;
}

/** A copy of `model` whose decoder Linear weights are dequant(quant(W)) (float32); other files linked. */
async function dequantizedCopy(model: string, dir: string, bits: 4 | 8): Promise<string> {
  for (const f of readdirSync(model)) if (!f.endsWith('.safetensors') && f !== 'cases') symlinkSync(join(model, f), join(dir, f));
  const ckpt = await Checkpoint.open(model);
  const tensors: Record<string, Tensor> = {};
  for (const name of ckpt.names()) {
    const t = await ckpt.read(name);
    if (DECODER_LINEAR.test(name) && t.shape.length === 2) {
      const [n, k] = t.shape as [number, number];
      const q = quantizeBlockwise(await ckpt.readFloat32(name), n, k, { bits, blockSize: 32, symmetric: false });
      tensors[name] = { dtype: 'F32', shape: [n, k], data: dequantize(q, n, k, bits, 32) };
    } else {
      tensors[name] = t;
    }
  }
  await ckpt.close();
  await writeSafetensors(join(dir, 'model.safetensors'), tensors);
  return dir;
}

async function logitsOf(dir: string, inputs: Record<string, HostTensor>, cacheDir: string, quantize?: QuantizeRequest) {
  const m = await loadPretrained(dir, { device: 'cpu', cacheDir, ...(quantize ? { quantize } : {}) });
  try {
    return (await m.forwardNamed(inputs)).logits!;
  } finally {
    await m.release();
  }
}

// The exact check once per bit width (int4 on ERNIE's experts, int8 on Granite's dense MLP): CI time.
describe.each([
  ['ernie-tiny', 'text-only', [4] as const],
  ['granite-tiny', 'batch-2', [8] as const],
])('%s (%s) quantized', (model, name, exactBits) => {
  const work = mkdtempSync(join(tmpdir(), 'vlmkit-quantize-test-'));
  const cacheDir = join(work, 'cache');
  const dir = join(FIXTURES, model);
  let inputs: Record<string, HostTensor>;
  let float: HostTensor;
  const decoderEntries = () => readdirSync(cacheDir).filter((f) => /-decoder-[0-9a-f]+\.onnx$/.test(f)).length;
  beforeAll(async () => {
    inputs = await readTensors(join(dir, 'cases', name, 'inputs.safetensors'));
    float = await logitsOf(dir, inputs, cacheDir);
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  // What float32 gives on the dequantized weights, up to float sums (accuracy level 0: float compute; LM head float).
  it.each(exactBits)('int%i equals float32 on the dequantized checkpoint', async (bits) => {
    const copy = await dequantizedCopy(dir, mkdtempSync(join(work, 'dq-')), bits);
    const ref = await logitsOf(copy, inputs, join(work, 'cache-dq'));
    const got = await logitsOf(dir, inputs, join(work, 'cache-exact'), { bits, accuracyLevel: 0, lmHead: false });
    expect(relError(got.data as Float32Array, ref.data as Float32Array)).toBeLessThan(1e-4);
    // And the quantization did something: the dequantized weights' logits are not float32's.
    expect(relError(ref.data as Float32Array, float.data as Float32Array)).toBeGreaterThan(1e-4);
  });

  // Bounds from tools/bench/quant-accuracy.mjs on these fixtures (random weights, hidden 64: int4 is coarse here).
  it.each([
    ['int8', 0.99, 0.8],
    ['int4', 0.3, 0.2],
  ] as const)('%s stays near float32 (last-token cosine > %d, top-1 agreement > %d) and caches on its own', async (mode, cos, top1) => {
    const before = decoderEntries();
    const q = await logitsOf(dir, inputs, cacheDir, mode);
    expect(q.dims).toEqual(float.dims);
    const a = agreement(q.data as Float32Array, float.data as Float32Array, q.dims);
    expect(a.cosine).toBeGreaterThan(cos);
    expect(a.top1).toBeGreaterThan(top1);
    // A decoder graph of its own in the cache (float32, int8, int4: the cache keeps 3 per graph and checkpoint);
    // loading it again finds it and gives the same logits.
    expect(decoderEntries()).toBe(before + 1);
    const again = await logitsOf(dir, inputs, cacheDir, mode);
    expect(decoderEntries()).toBe(before + 1);
    expect(again.data).toEqual(q.data);
  });
});

// quantize: { vision }: the vision encoder's linear layers block-quantized too (the decoder stays float32 here).
describe.each([
  ['ernie-tiny', 'images'],
  ['granite-tiny', 'multi-image'],
])('%s (%s) with a quantized vision encoder', (model, name) => {
  const work = mkdtempSync(join(tmpdir(), 'vlmkit-quantize-vision-test-'));
  const cacheDir = join(work, 'cache');
  const dir = join(FIXTURES, model);
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const visionGraphs = () => readdirSync(cacheDir).filter((f) => /-vision-[0-9a-f]+\.onnx$/.test(f));
  const opCount = (file: string, op: string) =>
    [...everyNode(onnx.ModelProto.decode(readFileSync(join(cacheDir, file))).graph?.node ?? [])].filter((n) => n.opType === op).length;

  it('int8: MatMulNBits in the vision graph (its own cache entry), logits near float32', async () => {
    const inputs = await readTensors(join(dir, 'cases', name, 'inputs.safetensors'));
    const float = await logitsOf(dir, inputs, cacheDir);
    const [floatGraph] = visionGraphs();
    const m = await loadPretrained(dir, { device: 'cpu', cacheDir, quantize: { vision: 'int8' } });
    let q: HostTensor;
    try {
      q = (await m.forwardNamed(inputs)).logits!;
    } finally {
      await m.release();
    }
    const quantGraph = visionGraphs().find((f) => f !== floatGraph)!;
    expect(quantGraph).toBeDefined();
    expect(opCount(floatGraph!, 'MatMulNBits')).toBe(0);
    const linears = opCount(quantGraph, 'MatMulNBits');
    expect(linears).toBeGreaterThan(4);
    // Every float product with a weight (a MatMul, or a FusedMatMul on the stored layout) became MatMulNBits:
    // what products remain multiply activations (attention).
    const products = (file: string) => opCount(file, 'MatMul') + opCount(file, 'FusedMatMul');
    expect(products(quantGraph)).toBe(products(floatGraph!) - linears);
    const a = agreement(q.data as Float32Array, float.data as Float32Array, q.dims);
    console.info(
      `[${model}] quantize.vision int8: ${linears} MatMulNBits, last-token cosine ${a.cosine.toFixed(5)}, top-1 ${a.top1}, rel error ${relError(q.data as Float32Array, float.data as Float32Array).toExponential(2)}`,
    );
    expect(a.cosine).toBeGreaterThan(0.99);
    expect(a.top1).toBeGreaterThan(0.8);
    expect(relError(q.data as Float32Array, float.data as Float32Array)).toBeGreaterThan(0);
  });

  it('a malformed request is refused before loading (BAD_LOAD_OPTIONS naming the option)', async () => {
    await expect(loadPretrained(dir, { device: 'cpu', cacheDir, quantize: { vision: 'int3' as 'int8' } })).rejects.toMatchObject({
      code: 'BAD_LOAD_OPTIONS',
      message: "quantize.vision: expected one of int8, int4, found 'int3'",
    });
    await expect(loadPretrained(dir, { device: 'cpu', cacheDir, quantize: { bits: 5 as 4 } })).rejects.toMatchObject({
      code: 'BAD_LOAD_OPTIONS',
      message: 'quantize: bits must be 4 or 8, found 5',
    });
  });

  it('refused with a 16-bit compute dtype (INCOMPATIBLE_OPTIONS)', async () => {
    await expect(loadPretrained(dir, { device: 'cpu', cacheDir, quantize: { vision: 'int4' }, dtype: 'float16' })).rejects.toMatchObject({
      code: 'INCOMPATIBLE_OPTIONS',
      message: expect.stringContaining('quantize.vision'),
    });
  });
});
