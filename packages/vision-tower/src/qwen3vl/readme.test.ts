import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { serializeModel, tensorFromSafetensors, Weights } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import {
  buildQwen3VlVisionTowerModel,
  QWEN3VL_VISION_TOWER_INPUTS,
  Qwen3VlVisionConfig,
  qwen3VlPatchDim,
  qwen3VlVisionInputs,
} from '../index.js';
import { FIXTURES, loadCase } from '../test-utils/fixtures.js';
import { relMaxError } from '../test-utils/ort.js';

/** The README's Qwen3-VL example, with the two-images fixture's pixel values in place of zeros; its code lines must stay in the README. */
it('README Qwen3-VL example runs and reproduces HF on the two-images fixture', async () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## Qwen3-VL'));
  const example = /```ts\n([\s\S]*?)```/.exec(section)![1]!;
  const self = readFileSync(new URL(import.meta.url), 'utf8');
  for (const line of example.split('\n').map((l) => l.trim())) {
    // Lines the test replaces: the import list, the fixture's absolute path, the real pixel values, and the printout it checks instead.
    const replaced = ['const dir =', 'const pixelValues =', 'console.log(', 'QWEN3VL_VISION_TOWER_INPUTS,', 'Qwen3VlVisionConfig,'];
    const importList = ['buildQwen3VlVisionTowerModel,', 'qwen3VlPatchDim,', 'qwen3VlVisionInputs,', '} from '];
    if (line === '' || line.startsWith('import ') || line.startsWith('//') || [...replaced, ...importList].some((r) => line.startsWith(r)))
      continue;
    expect(self, `README line not exercised here: ${line}`).toContain(line);
  }

  const dir = `${FIXTURES}qwen3-vl-tiny`;
  const config = Qwen3VlVisionConfig.fromHfConfig(JSON.parse(await readFile(`${dir}/config.json`, 'utf8')));
  const ckpt = await Checkpoint.open(dir);
  const prefix = 'model.visual.';
  const weights = Weights.from(
    new Map(
      ckpt
        .names()
        .filter((n) => n.startsWith(prefix))
        .map((n) => [n.slice(prefix.length).replace('.mlp.linear_fc', '.mlp.fc'), tensorFromSafetensors(ckpt.info(n))]),
    ),
  );
  const { bytes, externalData } = await serializeModel(buildQwen3VlVisionTowerModel(weights, config));
  const session = await ort.InferenceSession.create(bytes, { externalData });

  const grids = [
    [1, 4, 6],
    [1, 6, 4],
  ] as const;
  const x = qwen3VlVisionInputs(grids, config);
  const patchDim = qwen3VlPatchDim(config);
  const t = await loadCase('qwen3-vl-tiny', 'two-images');
  expect(t.get('image_grid_thw')!.data).toEqual(grids.flat());
  const pixelValues = t.get('pixel_values')!.data as Float32Array;
  const out = await session.run(
    QWEN3VL_VISION_TOWER_INPUTS.feeds<ort.Tensor>({
      pixel_values: new ort.Tensor('float32', pixelValues, [x.numPatches, patchDim]),
      pos_indices: new ort.Tensor('int32', x.posIndices, x.posShape),
      pos_weights: new ort.Tensor('float32', x.posWeights, x.posShape),
      rotary_cos: new ort.Tensor('float32', x.rotaryCos, x.rotaryShape),
      rotary_sin: new ort.Tensor('float32', x.rotarySin, x.rotaryShape),
      segment_ids: new ort.Tensor('int32', x.segmentIds, [x.numPatches]),
    }),
  );
  expect([out.vision_embeds!.dims, out.deepstack_0!.dims]).toEqual([
    [12, 64],
    [12, 64],
  ]);
  expect(relMaxError(out.vision_embeds!.data as Float32Array, t.get('image_embeds')!.data as Float32Array)).toBeLessThan(1e-5);
  await session.release();
  await ckpt.close();
});
