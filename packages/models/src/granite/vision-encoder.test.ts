import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { graniteTextConfigFromHf } from '@vlmkit/moe-decoder';
import { modelBytes } from '@vlmkit/onnx-graph';
import { createSession } from '@vlmkit/runtime';
import { Checkpoint } from '@vlmkit/safetensors';
import { describe, expect, it } from 'vitest';
import { fixtureCases, readTensors, relError } from '../test-utils/fixtures.js';
import type { Size } from './anyres.js';
import { granite4VisionConfig } from './config.js';
import { buildGraniteVisionEncoder, GRANITE_VISION_ENCODER_OUTPUTS, graniteVisionEncoderFeeds } from './vision-encoder.js';
import { loadGraniteWeights } from './weights.js';

describe.each(
  fixtureCases('granite-tiny').filter((c) => c.json.adapter === undefined),
)('Granite vision encoder against HF 5.17: $name', (c) => {
  it('every injected level (layerwise then spatial), packed and unpadded, within 1e-4', async () => {
    const json = JSON.parse(await readFile(join(c.checkpoint, 'config.json'), 'utf8')) as Record<string, unknown>;
    const config = granite4VisionConfig(json);
    const ckpt = await Checkpoint.open(c.checkpoint);
    const mapped = await loadGraniteWeights(ckpt, config, graniteTextConfigFromHf(json));
    const g = buildGraniteVisionEncoder(config, mapped);
    const session = await createSession(await modelBytes(g), { device: 'cpu' });
    const inputs = await readTensors(join(c.dir, 'inputs.safetensors'));
    const expected = await readTensors(join(c.dir, 'expected.safetensors'));
    const sizes = inputs.image_sizes!.data as BigInt64Array;
    const imageSizes: Size[] = Array.from({ length: sizes.length / 2 }, (_, i) => [Number(sizes[2 * i]), Number(sizes[2 * i + 1])]);
    const { feeds, plan } = graniteVisionEncoderFeeds(inputs.pixel_values!, imageSizes, config);
    expect(plan.tokensPerImage).toEqual(c.json.image_tokens);
    const out = await session.run(feeds);
    for (const level of config.levels) {
      const ref = expected[`image_features_level_${level.k}`]!;
      const got = out[GRANITE_VISION_ENCODER_OUTPUTS.names.deepstack(level.k)]!;
      expect(got.dims).toEqual(ref.dims);
      expect(relError(got.data as Float32Array, ref.data as Float32Array), `level ${level.k}`).toBeLessThan(1e-4);
    }
    await session.release();
    await ckpt.close();
  });
});
