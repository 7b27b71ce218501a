/**
 * Which attention kernel the ERNIE tower should use on ORT CPU: opset-23
 * Attention (bool frame mask) vs com.microsoft MultiHeadAttention (additive
 * bias). Real ERNIE width (hidden 1280, 16 heads of 80, MLP 5120), 1024 patches
 * (one 448x448 image, or 4 frames of 256), random weights.
 *
 *   cd packages/vision-tower && pnpm exec vitest bench --run bench/
 *
 * Set VLMKIT_BENCH_DEPTH (default 2) to time more blocks.
 */
import { Graph, type Value } from '@vlmkit/onnx-graph';
import ort from 'onnxruntime-node';
import { bench, describe } from 'vitest';
import { blockDiagonalMask } from '../src/ernie/attention-mask.js';
import { ErnieVisionConfig } from '../src/ernie/config.js';
import { ernieVisionInputs } from '../src/ernie/inputs.js';
import { expectedErnieVisionParameters } from '../src/ernie/parameters.js';
import { buildErnieVisionTowerModel } from '../src/ernie/vision-transformer.js';
import { randn, session } from '../src/test-utils/ort.js';
import { randomWeights } from '../src/test-utils/random-weights.js';

const depth = Number(process.env.VLMKIT_BENCH_DEPTH ?? 2);
const config = ErnieVisionConfig.fromHfConfig({
  vision_config: {
    depth,
    hidden_size: 1280,
    num_heads: 16,
    intermediate_size: 5120,
    patch_size: 14,
    in_channels: 3,
    spatial_merge_size: 2,
  },
});
const { weights } = randomWeights(expectedErnieVisionParameters(config), 1);

for (const [label, grids] of [
  ['1 image 32x32 (1024 patches)', [[1, 32, 32]]],
  ['4 frames 16x16 (1024 patches)', [[4, 16, 16]]],
] as const) {
  const inputs = ernieVisionInputs(grids as unknown as [number, number, number][], config);
  const n = inputs.numPatches;
  const feeds = {
    pixel_values: new ort.Tensor('float32', randn(n * 588, 2), [n, 588]),
    rotary_cos: new ort.Tensor('float32', inputs.rotaryCos, inputs.rotaryShape),
    rotary_sin: new ort.Tensor('float32', inputs.rotarySin, inputs.rotaryShape),
    segment_ids: new ort.Tensor('int32', inputs.segmentIds, [n]),
  };
  describe(`ERNIE tower, ${depth} blocks, ${label}`, () => {
    for (const op of ['Attention', 'MultiHeadAttention'] as const) {
      let s: ort.InferenceSession | undefined;
      bench(
        op,
        async () => {
          s ??= await session(buildErnieVisionTowerModel(weights, config, { attentionOp: op }));
          await s.run(feeds);
        },
        { iterations: 8, warmupIterations: 2, time: 0, warmupTime: 0 },
      );
    }
  });
}

// The attention op alone (q, k, v [1, 1024, 1280], 16 heads, 4 frames of 256), where the kernels differ.
describe('attention op alone, 1024 patches, 16 heads of 80, 4 frames', () => {
  const n = 1024;
  const seg = Int32Array.from({ length: n }, (_, i) => Math.floor(i / 256));
  const feeds = {
    q: new ort.Tensor('float32', randn(n * 1280, 3), [1, n, 1280]),
    k: new ort.Tensor('float32', randn(n * 1280, 4), [1, n, 1280]),
    v: new ort.Tensor('float32', randn(n * 1280, 5), [1, n, 1280]),
    seg: new ort.Tensor('int32', seg, [n]),
  };
  for (const op of ['Attention', 'MultiHeadAttention'] as const) {
    let s: ort.InferenceSession | undefined;
    bench(
      op,
      async () => {
        if (s === undefined) {
          const g = new Graph();
          const [q, k, v] = ['q', 'k', 'v'].map((x) => g.input(x, 'float32', [1, 'n', 1280])) as [Value, Value, Value];
          const frames = blockDiagonalMask(g, g.input('seg', 'int32', ['n']), op, 'float32');
          const out =
            frames.op === 'Attention'
              ? g.attention(q, k, v, { qNumHeads: 16, kvNumHeads: 16, mask: frames.mask }).out
              : g.multiHeadAttention(q, k, v, { numHeads: 16, attentionBias: frames.bias }).out;
          g.output(out, 'y');
          s = await session(g);
        }
        await s.run(feeds);
      },
      { iterations: 30, warmupIterations: 3, time: 0, warmupTime: 0 },
    );
  }
});
