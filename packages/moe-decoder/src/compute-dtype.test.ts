// The decoders' graph I/O per compute dtype: public inputs and logits float32 whatever the dtype, the KV cache
// in kvCacheDType (float16 for float16; float32 holding bfloat16 values for bfloat16, which onnxruntime-node
// cannot feed), and weights stored in the compute dtype once the model is saved folded. Numbers per dtype are
// checked on the fixtures end to end in @vlmkit/models' compute-dtype.test.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMPUTE_DTYPES, type ComputeDType, computeDtypePasses, type Graph, loadModelProto, onnx, saveModel } from '@vlmkit/onnx-graph';
import { afterAll, describe, expect, it } from 'vitest';
import { buildErnieDecodeLoopModel } from './ernie/decode-loop.js';
import { buildErnieTextDecoderModel } from './ernie/standalone.js';
import { buildGraniteDecodeLoopModel } from './granite/decode-loop.js';
import { buildGraniteTextDecoderModel } from './granite/standalone.js';
import { kvCacheDType } from './kv-io.js';
import { randomGraniteWeights, randomWeights, tinyConfig, tinyGraniteConfig } from './test-utils/random-model.js';

function io(g: Graph): Record<string, string> {
  const snap = g.snapshot();
  return Object.fromEntries([...snap.inputs, ...snap.outputs].map((v) => [v.name, v.dtype]));
}

const work = mkdtempSync(join(tmpdir(), 'vlmkit-decoder-dtype-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe.each(COMPUTE_DTYPES)('computeDtype %s', (dtype: ComputeDType) => {
  const kv = dtype === 'float16' ? 'float16' : 'float32';
  it('ERNIE: float32 inputs and logits, the KV cache in kvCacheDType', () => {
    expect(kvCacheDType(dtype)).toBe(kv);
    const g = buildErnieTextDecoderModel(randomWeights(tinyConfig).weights, tinyConfig, {
      passes: computeDtypePasses(dtype),
      logitsToKeep: true,
    });
    expect(g.computeDtype).toBe(dtype);
    const types = io(g);
    for (const name of ['vision_embeds', 'rope_cos', 'rope_sin', 'logits']) expect(types[name], name).toBe('float32');
    for (const name of ['past_key_values.0.key', 'past_key_values.2.value', 'present.0.key', 'present.2.value'])
      expect(types[name], name).toBe(kv);
  });

  it('ERNIE saved folded: float32 weights stored in the compute dtype (no Cast reads a weight), the tied table once; the router gate float32', async () => {
    const g = buildErnieTextDecoderModel(randomWeights(tinyConfig).weights, tinyConfig, { passes: computeDtypePasses(dtype) });
    const path = join(work, `ernie-${dtype}.onnx`);
    await saveModel(g, path, { fold: true });
    const proto = await loadModelProto(path);
    const inits = new Map(proto.graph!.initializer!.map((t) => [t.name!, t.dataType!]));
    const T = onnx.TensorProto.DataType;
    const want = { float32: T.FLOAT, float16: T.FLOAT16, bfloat16: T.BFLOAT16 }[dtype];
    const byName = (re: RegExp) => [...inits].filter(([n]) => re.test(n));
    expect(byName(/layers\.0\.self_attn\.qkv_proj/).map(([, t]) => t)).toEqual([want]);
    expect(byName(/layers\.1\.mlp\.text_experts\.0\.down_proj/).map(([, t]) => t)).toEqual([want]);
    expect(byName(/text_experts_gate\.weight/).every(([, t]) => t === T.FLOAT)).toBe(true);
    // The tied embedding table is stored once, in the compute dtype (Gather and the LM head read one tensor).
    const { vocabSize: V, hiddenSize: D } = tinyConfig;
    const tables = proto.graph!.initializer!.filter((t) => t.dims!.length === 2 && Number(t.dims![0]) === V && Number(t.dims![1]) === D);
    expect(tables.map((t) => t.dataType)).toEqual([want]);
    const castOfWeight = proto.graph!.node!.filter((n) => n.opType === 'Cast' && inits.has(n.input![0]!));
    expect(castOfWeight.map((n) => n.name)).toEqual([]);
  });

  it('Granite: float32 deepstack inputs and logits, the KV cache in kvCacheDType', () => {
    const g = buildGraniteTextDecoderModel(randomGraniteWeights(tinyGraniteConfig, 3), tinyGraniteConfig, {
      levels: [0, 1],
      passes: computeDtypePasses(dtype),
      outputHiddenStates: true,
    });
    const types = io(g);
    for (const name of ['deepstack_0', 'logits', 'hidden_states.0', 'inputs_embeds']) expect(types[name], name).toBe('float32');
    for (const name of ['past_key_values.0.key', 'present.1.value']) expect(types[name], name).toBe(kv);
  });

  it('decode loops: the KV cache I/O in kvCacheDType as the step graph, carried through the Loop in the compute dtype', () => {
    const T = onnx.TensorProto.DataType;
    const elem = { float32: T.FLOAT, float16: T.FLOAT16, bfloat16: T.BFLOAT16 }[dtype];
    for (const g of [
      buildErnieDecodeLoopModel(randomWeights(tinyConfig).weights, tinyConfig, { passes: computeDtypePasses(dtype) }),
      buildGraniteDecodeLoopModel(randomGraniteWeights(tinyGraniteConfig, 3), tinyGraniteConfig, {
        levels: [0, 1],
        passes: computeDtypePasses(dtype),
      }),
    ]) {
      expect(g.computeDtype).toBe(dtype);
      const types = io(g);
      for (const name of ['past_key_values.0.key', 'past_key_values.1.value', 'present.0.key', 'present.1.value'])
        expect(types[name], `${g.name} ${name}`).toBe(kv);
      const loop = g.snapshot().nodes.find((n) => n.opType === 'Loop')!;
      const body = loop.attribute!.find((a) => a.name === 'body')!.g!;
      // The body's last 2L carried inputs are the KV cache (key, value per layer), in the compute dtype.
      const L = 2 * (g.name.startsWith('ernie') ? tinyConfig : tinyGraniteConfig).numHiddenLayers;
      const carried = body.input!.slice(-L).map((v) => v.type!.tensorType!.elemType);
      expect(carried, g.name).toEqual(new Array(L).fill(elem));
    }
  });
});
