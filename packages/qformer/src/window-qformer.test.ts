import { Graph, tensorFromArray, Weights } from '@vlmkit/onnx-graph';
import { bf16ToF32, Checkpoint, f32ToBf16 } from '@vlmkit/safetensors';
import { describe, expect, it } from 'vitest';
import { expectedParameters } from './parameters.js';
import { GRANITE_TINY, QFORMER_CASES, readJson, readTensor, shapesUnder, weightsUnder } from './test-utils/fixtures.js';
import { f32, relMaxError, runGraph } from './test-utils/run.js';
import { fromHfConfig, windowGeometry } from './window-config.js';
import {
  buildWindowQFormerDownsampler,
  buildWindowQFormerDownsamplerModel,
  type DownsampleMode,
  WINDOW_QFORMER_IO,
} from './window-qformer.js';

const TOL = 1e-4; // max |ours - HF| / max |HF|

/** Projector k of a checkpoint: its module prefix, mode and the expected tensor's name. */
const PROJECTORS: { prefix: string; mode: DownsampleMode; expected: string }[] = [
  { prefix: 'layerwise_projectors.0.', mode: 'area', expected: 'layerwise_projector_0' },
  ...([0, 1, 2, 3] as const).map((k) => ({ prefix: `spatial_projectors.${k}.`, mode: { offset: k }, expected: `spatial_projector_${k}` })),
];

async function runProjector(
  checkpoint: string,
  prefix: string,
  config: ReturnType<typeof fromHfConfig>,
  mode: DownsampleMode,
  features: Float32Array,
  tiles: number,
) {
  const weights = await weightsUnder(checkpoint, prefix);
  const g = buildWindowQFormerDownsamplerModel(weights, config, { mode });
  const out = await runGraph(g, { [WINDOW_QFORMER_IO.features]: f32(features, [tiles, config.imageSide ** 2, config.visionHiddenSize]) });
  return out[WINDOW_QFORMER_IO.projected]!;
}

describe('buildWindowQFormerDownsamplerModel vs HF 5.17 Granite4VisionWindowQFormerDownsampler (test-fixtures/qformer)', () => {
  const cases = [
    { name: 'window-2-4', projectors: PROJECTORS }, // side 12: 3x3 windows of 4x4 keys, 2x2 queries
    { name: 'window-4-8', projectors: PROJECTORS }, // side 16: 2x2 windows of 8x8 keys, 4x4 queries
    { name: 'area-2-3', projectors: PROJECTORS.slice(0, 1) }, // side 6 -> 4: non-integer area cells
  ];
  for (const c of cases) {
    for (const p of c.projectors) {
      const label = p.mode === 'area' ? 'area' : `offset ${p.mode.offset}`;
      it(`${c.name}: ${label} (${p.expected})`, async () => {
        const dir = `${QFORMER_CASES}${c.name}/`;
        const config = fromHfConfig(readJson(`${dir}config.json`));
        const features = await readTensor(`${dir}inputs.safetensors`, 'features');
        const ref = await readTensor(`${dir}expected.safetensors`, p.expected);
        const got = await runProjector(`${dir}model.safetensors`, p.prefix, config, p.mode, features.data, features.shape[0]!);
        expect(got.dims).toEqual(ref.shape);
        expect(got.dims[1]).toBe(windowGeometry(config).tokensPerTile);
        const { rel, maxAbs } = relMaxError(got.data as Float32Array, ref.data);
        console.log(`${c.name} ${p.expected}: rel ${rel.toExponential(2)} (max abs ${maxAbs.toExponential(2)})`);
        expect(rel).toBeLessThan(TOL);
      });
    }
  }
});

describe('window Q-Former projectors vs the granite-tiny fixtures (HF 5.17 Granite4VisionModel, "2/4")', () => {
  const json = readJson(`${GRANITE_TINY}config.json`) as { deepstack_layer_map: [number, number][]; spatial_vision_layer: number };
  const config = fromHfConfig(json);
  const checkpoint = `${GRANITE_TINY}model.safetensors`;

  for (const caseName of ['anyres', 'batch-2']) {
    it(`${caseName}: all 4 layerwise and 4 spatial projectors from vision_hidden_states`, async () => {
      const exp = `${GRANITE_TINY}cases/${caseName}/expected.safetensors`;
      const hs = await readTensor(exp, 'vision_hidden_states'); // [L+1, tiles, s*s, Dv]
      const [levels, tiles, p, dv] = hs.shape as [number, number, number, number];
      const level = (i: number) => {
        const k = i < 0 ? levels + i : i; // Python indexing into the hidden-state tuple
        return hs.data.subarray(k * tiles * p * dv, (k + 1) * tiles * p * dv);
      };
      const runs = [
        ...json.deepstack_layer_map.map(([vision], k) => ({
          prefix: `model.layerwise_projectors.${k}.`,
          mode: 'area' as DownsampleMode,
          name: `layerwise_projector_${k}`,
          vision,
        })),
        ...([0, 1, 2, 3] as const).map((k) => ({
          prefix: `model.spatial_projectors.${k}.`,
          mode: { offset: k } as DownsampleMode,
          name: `spatial_projector_${k}`,
          vision: json.spatial_vision_layer,
        })),
      ];
      const report: string[] = [];
      for (const r of runs) {
        const ref = await readTensor(exp, r.name);
        const got = await runProjector(checkpoint, r.prefix, config, r.mode, level(r.vision), tiles);
        expect(got.dims).toEqual(ref.shape);
        const { rel } = relMaxError(got.data as Float32Array, ref.data);
        report.push(`${r.name} ${rel.toExponential(2)}`);
        expect(rel, r.name).toBeLessThan(TOL);
      }
      console.log(`granite-tiny ${caseName}: ${report.join(', ')}`);
    });
  }

  it('the checkpoint holds exactly expectedParameters(config) for every projector', async () => {
    const want = expectedParameters(config)
      .map((s) => ({ name: s.name, shape: [...s.shape] }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const prefix of [0, 1, 2, 3].flatMap((k) => [`model.layerwise_projectors.${k}.`, `model.spatial_projectors.${k}.`])) {
      expect(await shapesUnder(checkpoint, prefix), prefix).toEqual(want);
    }
  });

  it('8 projectors in one graph under their checkpoint module names give what each gives alone', async () => {
    const exp = `${GRANITE_TINY}cases/anyres/expected.safetensors`;
    const hs = await readTensor(exp, 'vision_hidden_states');
    const [levels, tiles, p, dv] = hs.shape as [number, number, number, number];
    const g = new Graph();
    const feeds: Record<string, ReturnType<typeof f32>> = {};
    for (let i = 0; i < levels; i++)
      feeds[`hidden_${i}`] = f32(hs.data.slice(i * tiles * p * dv, (i + 1) * tiles * p * dv), [tiles, p, dv]);
    const inputs = Array.from({ length: levels }, (_, i) => g.input(`hidden_${i}`, 'float32', ['tiles', p, dv]));
    const pick = (v: number) => inputs[v < 0 ? levels + v : v]!;
    const names: string[] = [];
    for (let k = 0; k < 4; k++) {
      const scope = `layerwise_projectors.${k}`;
      const w = await weightsUnder(checkpoint, `model.${scope}.`);
      g.output(
        buildWindowQFormerDownsampler(g, w, config, { features: pick(json.deepstack_layer_map[k]![0]) }, { mode: 'area', scope }).projected,
        `layerwise_projector_${k}`,
      );
      names.push(`layerwise_projector_${k}`);
    }
    for (const k of [0, 1, 2, 3] as const) {
      const scope = `spatial_projectors.${k}`;
      const w = await weightsUnder(checkpoint, `model.${scope}.`);
      g.output(
        buildWindowQFormerDownsampler(g, w, config, { features: pick(json.spatial_vision_layer) }, { mode: { offset: k }, scope })
          .projected,
        `spatial_projector_${k}`,
      );
      names.push(`spatial_projector_${k}`);
    }
    const out = await runGraph(g, feeds);
    for (const name of names) {
      const ref = await readTensor(exp, name);
      expect(relMaxError(out[name]!.data as Float32Array, ref.data).rel, name).toBeLessThan(TOL);
    }
  });
});

describe('buildWindowQFormerDownsampler options and inputs', () => {
  const dir = `${QFORMER_CASES}area-2-3/`;
  const code = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      return `${(err as { code: string }).code}: ${(err as Error).message}`;
    }
    return 'no error';
  };

  it('a spatial offset with a rate other than 1/2 is UNSUPPORTED_CONFIG (both references fail); a bad mode or feature shape is BAD_INPUT', async () => {
    const config = fromHfConfig(readJson(`${dir}config.json`)); // "2/3"
    const weights = await weightsUnder(`${dir}model.safetensors`, 'layerwise_projectors.0.');
    expect(code(() => buildWindowQFormerDownsamplerModel(weights, config, { mode: { offset: 1 } }))).toMatch(
      /^UNSUPPORTED_CONFIG: .*needs downsample_rate 1\/2.*got 2\/3/,
    );
    expect(code(() => buildWindowQFormerDownsamplerModel(weights, config, { mode: { offset: 4 as 0 } }))).toMatch(
      /^BAD_INPUT: .*mode must be 'area' or \{ offset/,
    );
    expect(code(() => buildWindowQFormerDownsamplerModel(weights, config, { mode: 'mean' as 'area' }))).toMatch(/^BAD_INPUT/);
    const g = new Graph();
    const wrong = g.input('f', 'float32', ['n', 35, 16]);
    expect(code(() => buildWindowQFormerDownsampler(g, weights, config, { features: wrong }, { mode: 'area' }))).toMatch(
      /^BAD_INPUT: .*features must be \[num_tiles, 36, 16\]/,
    );
  });

  it('the fixture comparison can fail: offset 1 weights sampled at offset 2 miss spatial_projector_1 by far', async () => {
    const d = `${QFORMER_CASES}window-2-4/`;
    const config = fromHfConfig(readJson(`${d}config.json`));
    const features = await readTensor(`${d}inputs.safetensors`, 'features');
    const ref = await readTensor(`${d}expected.safetensors`, 'spatial_projector_1');
    const got = await runProjector(
      `${d}model.safetensors`,
      'spatial_projectors.1.',
      config,
      { offset: 2 },
      features.data,
      features.shape[0]!,
    );
    expect(relMaxError(got.data as Float32Array, ref.data).rel).toBeGreaterThan(1e-2);
  });
});

describe('half-precision weights', () => {
  it('bf16 weights are cast in the graph: same output as float32 weights holding the bf16-rounded values', async () => {
    const config = fromHfConfig(readJson(`${GRANITE_TINY}config.json`));
    const ckpt = await Checkpoint.open(`${GRANITE_TINY}model.safetensors`);
    const bf16: Record<string, ReturnType<typeof tensorFromArray>> = {};
    const rounded: Record<string, ReturnType<typeof tensorFromArray>> = {};
    for (const { name, shape } of expectedParameters(config)) {
      const bits = f32ToBf16(await ckpt.readFloat32(`model.spatial_projectors.1.${name}`));
      bf16[name] = tensorFromArray('bfloat16', shape, bits);
      rounded[name] = tensorFromArray('float32', shape, bf16ToF32(bits));
    }
    await ckpt.close();
    const hs = await readTensor(`${GRANITE_TINY}cases/anyres/expected.safetensors`, 'vision_hidden_states');
    const [, tiles, p, dv] = hs.shape as [number, number, number, number];
    const feeds = { [WINDOW_QFORMER_IO.features]: f32(hs.data.slice(0, tiles * p * dv), [tiles, p, dv]) };
    const run = async (w: Record<string, ReturnType<typeof tensorFromArray>>) =>
      (await runGraph(buildWindowQFormerDownsamplerModel(Weights.from(w), config, { mode: { offset: 1 } }), feeds))[
        WINDOW_QFORMER_IO.projected
      ]!.data as Float32Array;
    const [a, b] = [await run(bf16), await run(rounded)];
    expect(relMaxError(a, b).rel).toBeLessThan(1e-6);
  });
});
