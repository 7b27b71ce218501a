import { readFileSync } from 'node:fs';
import { serializeModel, tensorFromSafetensors, Weights } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { buildWindowQFormerDownsamplerModel, expectedParameters, fromHfConfig, windowGeometry } from './index.js';
import { FIXTURES } from './test-utils/fixtures.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

it('README example runs and gives the documented shapes', async () => {
  // The README's example, verbatim apart from the imports and `dir`.
  const dir = `${FIXTURES}granite-tiny`;
  const config = fromHfConfig(JSON.parse(readFileSync(`${dir}/config.json`, 'utf8')));

  // The third spatial projector (bottom-left corners): its parameters are the checkpoint's
  // `model.spatial_projectors.2.*` under the projector's own names (@vlmkit/weight-mapper's job).
  const ckpt = await Checkpoint.open(dir);
  const weights = Weights.from(
    Object.fromEntries(
      expectedParameters(config).map(({ name }) => [name, tensorFromSafetensors(ckpt.info(`model.spatial_projectors.2.${name}`))]),
    ),
  );
  const graph = buildWindowQFormerDownsamplerModel(weights, config, { mode: { offset: 2 } });
  const { bytes, externalData } = await serializeModel(graph);
  const session = await ort.InferenceSession.create(bytes, { externalData });

  // 3 tiles of 8x8 SigLIP features (width 32), e.g. vision_hidden_states[spatial_vision_layer].
  const tiles = 3;
  const features = new Float32Array(tiles * config.imageSide ** 2 * config.visionHiddenSize).map((_, i) => Math.sin(i));
  const { projected } = await session.run({
    features: new ort.Tensor('float32', features, [tiles, config.imageSide ** 2, config.visionHiddenSize]),
  });
  // projected.dims = [3, 16, 64]: per tile a 4x4 grid ("2/4" on 8x8 patches), LM width 64
  // windowGeometry(config) = { numWindows: 2, downsampledSide: 4, tokensPerTile: 16 }

  expect(projected!.dims).toEqual([3, 16, 64]);
  expect(windowGeometry(config)).toEqual({ numWindows: 2, downsampledSide: 4, tokensPerTile: 16 });
  expect(Array.from(projected!.data as Float32Array).every(Number.isFinite)).toBe(true);
  await session.release();
  await ckpt.close();
});

it('the README shows the same example code as this test', () => {
  const block = README.split('```ts\n')[1]!.split('```')[0]!;
  const body = block.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('import ') && !l.startsWith('const dir ='));
  const source = readFileSync(new URL(import.meta.url), 'utf8');
  for (const line of body) expect(source, `README line not in the test: ${line}`).toContain(line.trim());
});
