import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { serializeModel, tensorFromSafetensors, Weights } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { buildErnieVisionTowerModel, ErnieVisionConfig, ernieVisionInputs } from './index.js';
import { FIXTURES, loadCase } from './test-utils/fixtures.js';
import { relMaxError } from './test-utils/ort.js';

/** The README's example, with the fixture's real pixel values in place of zeros; its code lines must stay in the README. */
it('README example runs and reproduces HF on the images fixture', async () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const example = /```ts\n([\s\S]*?)```/.exec(readme)![1]!;
  const self = readFileSync(new URL(import.meta.url), 'utf8');
  for (const line of example.split('\n').map((l) => l.trim())) {
    // Lines the test replaces: the fixture's absolute path, the real pixel values, and the printout it checks instead.
    const replaced = ['const dir =', 'const pixelValues =', 'console.log('];
    if (line === '' || line.startsWith('import ') || line.startsWith('//') || replaced.some((r) => line.startsWith(r))) continue;
    expect(self, `README line not exercised here: ${line}`).toContain(line);
  }

  const dir = `${FIXTURES}ernie-tiny`;
  const config = ErnieVisionConfig.fromHfConfig(JSON.parse(await readFile(`${dir}/config.json`, 'utf8')));
  const ckpt = await Checkpoint.open(dir);
  const prefix = 'model.vision_model.';
  const weights = Weights.from(
    new Map(
      ckpt
        .names()
        .filter((n) => n.startsWith(prefix))
        .map((n) => [n.slice(prefix.length), tensorFromSafetensors(ckpt.info(n))]),
    ),
  );
  const { bytes, externalData } = await serializeModel(buildErnieVisionTowerModel(weights, config));
  const session = await ort.InferenceSession.create(bytes, { externalData });

  const x = ernieVisionInputs(
    [
      [1, 4, 6],
      [1, 6, 4],
    ],
    config,
  );
  const t = await loadCase('ernie-tiny', 'images');
  const pixelValues = t.get('pixel_values')!.data as Float32Array;
  const { vision_hidden } = await session.run({
    pixel_values: new ort.Tensor('float32', pixelValues, [x.numPatches, 588]),
    rotary_cos: new ort.Tensor('float32', x.rotaryCos, x.rotaryShape),
    rotary_sin: new ort.Tensor('float32', x.rotarySin, x.rotaryShape),
    segment_ids: new ort.Tensor('int32', x.segmentIds, [x.numPatches]),
  });
  expect(vision_hidden!.dims).toEqual([48, 32]);
  // Default reference is vLLM's; with HF's layout config (no top-level rms_norm_eps) its eps equal HF's.
  expect(relMaxError(vision_hidden!.data as Float32Array, t.get('image_vision_hidden')!.data as Float32Array)).toBeLessThan(1e-4);
  await session.release();
  await ckpt.close();
});
