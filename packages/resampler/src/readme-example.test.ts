import { readFileSync } from 'node:fs';
import { serializeModel, tensorFromSafetensors, Weights } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { buildErnieResamplerModel, expectedParameters, fromHfConfig, resamplerInputs } from './index.js';
import { FIXTURES } from './test-utils/fixtures.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

it('README example runs and gives the documented shapes', async () => {
  // The README's example, verbatim apart from the imports and `dir`.
  const dir = `${FIXTURES}ernie-tiny`;
  const config = fromHfConfig(JSON.parse(readFileSync(`${dir}/config.json`, 'utf8')));

  // Component names -> hub names (@vlmkit/weight-mapper's job): spatial_linear1.weight <- model.resampler_model.spatial_linear.0.weight
  const hubName = (name: string) =>
    'model.resampler_model.' +
    name
      .replace(/^(spatial|temporal)_linear([12])\./, (_, m, i) => `${m}_linear.${i === '1' ? 0 : 2}.`)
      .replace(/^(spatial|temporal)_norm\./, '$1_linear.3.');
  const ckpt = await Checkpoint.open(dir);
  const weights = Weights.from(
    Object.fromEntries(expectedParameters(config).map(({ name }) => [name, tensorFromSafetensors(ckpt.info(hubName(name)))])),
  );

  const { bytes, externalData } = await serializeModel(buildErnieResamplerModel(weights, config));
  const session = await ort.InferenceSession.create(bytes, { externalData });

  // An image (grid [1, 4, 6]) and a 4-frame video ([4, 4, 4]) in one call.
  const idx = resamplerInputs(
    [
      [1, 4, 6],
      [4, 4, 4],
    ],
    config,
  );
  const visionHidden = new Float32Array(idx.numPatches * config.visionHiddenSize).fill(0.5); // the tower's output
  const { embeds } = await session.run({
    vision_hidden: new ort.Tensor('float32', visionHidden, [idx.numPatches, config.visionHiddenSize]),
    first_slice: new ort.Tensor('int64', idx.firstSlice, [idx.numTokens]),
    second_slice: new ort.Tensor('int64', idx.secondSlice, [idx.numTokens]),
  });
  // embeds.dims = [14, 64]: 6 image rows, then 8 video rows (idx.tokensPerItem = [6, 8])

  expect(embeds!.dims).toEqual([14, 64]);
  expect(idx.tokensPerItem).toEqual([6, 8]);
  expect(Array.from(embeds!.data as Float32Array).every(Number.isFinite)).toBe(true);
  await session.release();
  await ckpt.close();
});

it('the README shows the same example code as this test', () => {
  const block = README.split('```ts\n')[1]!.split('```')[0]!;
  const body = block.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('import ') && !l.startsWith('const dir ='));
  const source = readFileSync(new URL(import.meta.url), 'utf8');
  for (const line of body) expect(source, `README line not in the test: ${line}`).toContain(line.trim());
});
