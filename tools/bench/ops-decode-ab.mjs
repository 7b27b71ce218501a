// Where the decode time of the fused (com.microsoft) ERNIE decoder goes: one decode step (B 1, S 1, a past of
// --past positions) of the standalone decoder built four ways, timed interleaved on one device:
//   onnx          the standard ops (opset-23 Attention, RMSNormalization, RotaryEmbedding; sparse experts)
//   contrib-mha   fused norms, rotary and MultiHeadAttention; experts still the sparse per-expert MatMuls
//   contrib-moe   the same with the experts as one com.microsoft MoE per modality (moe-experts; the cuda profile)
//   contrib-gqa   GroupQueryAttention instead of MultiHeadAttention, MoE
// Prints the median step per variant (medians over --rounds rounds of --steps steps each). Not a test; needs
// `pnpm build`. usage: node tools/bench/ops-decode-ab.mjs --model DIR [--past 1024] [--steps 10] [--rounds 3] [--threads N]

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  buildErnieTextDecoderModel,
  DECODER_OUTPUTS,
  ERNIE_DECODER_INPUTS,
  ernieTextConfigFromHf,
  ernieTextExpectedParameters,
} from '../../packages/moe-decoder/dist/index.js';
import { resolvePasses, serializeModel } from '../../packages/onnx-graph/dist/index.js';
import { Checkpoint } from '../../packages/safetensors/dist/index.js';
import { mapErnie45VL } from '../../packages/weight-mapper/dist/index.js';

// onnxruntime-node as @vlmkit/runtime resolves it (tools/ has no node_modules of its own).
const ort = createRequire(new URL('../../packages/runtime/package.json', import.meta.url))('onnxruntime-node');

const { values: o } = parseArgs({
  options: {
    model: { type: 'string' },
    past: { type: 'string', default: '1024' },
    steps: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    threads: { type: 'string' },
  },
});
if (!o.model) throw new Error('usage: ops-decode-ab.mjs --model DIR [--past 1024] [--steps 10] [--rounds 3]');
const dir = resolve(o.model);
const config = ernieTextConfigFromHf(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')));
const [P, steps, rounds] = [Number(o.past), Number(o.steps), Number(o.rounds)];
// Build options, passes among them (onnx-graph PASSES by name; float32's default kernel is MultiHeadAttention).
// The contrib builds drop the empty-modality If as the cuda profile does; the GQA variant keeps it.
const contrib = (kernel = '') => resolvePasses(['skip-rms-norm', 'skip-layer-norm', `contrib-attention${kernel}`]);
const moe = resolvePasses(['moe-experts']);
const VARIANTS = {
  onnx: {},
  'contrib-mha': { emptyModalityIf: false, passes: contrib() },
  'contrib-moe': { emptyModalityIf: false, passes: [...contrib(), ...moe] },
  'contrib-gqa': { passes: [...contrib('-gqa'), ...moe] },
};
const ckpt = await Checkpoint.open(dir);
const sessions = {};
const { decoder } = await mapErnie45VL(ckpt, {
  vision: { parameters: [] },
  resampler: { parameters: [] },
  decoder: { parameters: ernieTextExpectedParameters(config), config },
});
for (const [name, opts] of Object.entries(VARIANTS)) {
  const graph = buildErnieTextDecoderModel(decoder, config, opts);
  const { bytes, externalData } = await serializeModel(graph);
  sessions[name] = await ort.InferenceSession.create(bytes, {
    externalData,
    executionProviders: ['cpu'],
    logSeverityLevel: 3,
    // As @vlmkit/runtime's sessions (prepacking off by default).
    extra: { session: { disable_prepacking: '1' } },
    ...(o.threads ? { intraOpNumThreads: Number(o.threads) } : {}),
  });
}
await ckpt.close();

const { numHiddenLayers: L, numKeyValueHeads: hkv, headDim: hd, hiddenSize: D } = config;
const t = (type, data, dims) => new ort.Tensor(type, data, dims);
const rand = (n) => Float32Array.from({ length: n }, () => Math.random() - 0.5);
const angles = rand(hd / 2);
const feeds = ERNIE_DECODER_INPUTS.feeds({
  input_ids: t('int64', BigInt64Array.from([5n]), [1, 1]),
  vision_embeds: t('float32', new Float32Array(0), [0, D]),
  vision_positions: t('int64', new BigInt64Array(0), [0]),
  moe_token_type: t('int64', BigInt64Array.from([0n]), [1, 1]),
  attention_mask: t('int64', new BigInt64Array(P + 1).fill(1n), [1, P + 1]),
  rope_cos: t('float32', angles.map(Math.cos), [1, 1, hd / 2]),
  rope_sin: t('float32', angles.map(Math.sin), [1, 1, hd / 2]),
  past_key_values: Array.from({ length: L }, () => ({
    key: t('float32', rand(hkv * P * hd), [1, hkv, P, hd]),
    value: t('float32', rand(hkv * P * hd), [1, hkv, P, hd]),
  })),
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = Object.fromEntries(Object.keys(VARIANTS).map((k) => [k, []]));
const logits = {};
for (const [name, s] of Object.entries(sessions)) logits[name] = (await s.run(feeds))[DECODER_OUTPUTS.names.logits].data; // warm-up
for (let r = 0; r < rounds; r++) {
  const order = Object.keys(VARIANTS);
  if (r % 2 === 1) order.reverse();
  for (const name of order) {
    const each = [];
    for (let i = 0; i < steps; i++) {
      const t0 = performance.now();
      await sessions[name].run(feeds);
      each.push(performance.now() - t0);
    }
    ms[name].push(median(each));
  }
}
const maxDiff = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
console.log(`${dir}: decode step, B 1, past ${P}, ${rounds} interleaved rounds of ${steps} steps (medians)`);
console.log('| variant | ms/step | vs onnx | max |logits - onnx| |');
console.log('| --- | --- | --- | --- |');
for (const name of Object.keys(VARIANTS)) {
  const m = median(ms[name]);
  console.log(
    `| ${name} | ${m.toFixed(1)} | ${(m / median(ms.onnx)).toFixed(2)} | ${maxDiff(logits[name], logits.onnx).toExponential(1)} |`,
  );
}
for (const s of Object.values(sessions)) await s.release();
