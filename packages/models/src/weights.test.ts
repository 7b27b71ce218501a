/**
 * The mapper fed the components' derived parameter lists (loadErnieWeights,
 * loadGraniteWeights) against the checkpoints transformers 5.17 wrote: every
 * listed parameter found with its listed shape, every checkpoint tensor used
 * (or deliberately ignored), for each expert path.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ernieTextExpectedParameters, graniteTextConfigFromHf } from '@vlmkit/moe-decoder';
import { Checkpoint } from '@vlmkit/safetensors';
import { expectedErnieVisionParameters, expectedSiglipVisionParameters } from '@vlmkit/vision-tower';
import { describe, expect, it } from 'vitest';
import { ernie45VLConfig } from './ernie/config.js';
import { loadErnieWeights } from './ernie/weights.js';
import { granite4VisionConfig } from './granite/config.js';
import { graniteComponents, loadGraniteWeights } from './granite/weights.js';
import { FIXTURES } from './test-utils/fixtures.js';

const json = async (dir: string) => JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;

describe('loadErnieWeights on test-fixtures/ernie-tiny', () => {
  it('the derived lists, mapped strictly, use every checkpoint tensor', async () => {
    const dir = join(FIXTURES, 'ernie-tiny');
    const config = ernie45VLConfig(await json(dir));
    const ckpt = await Checkpoint.open(dir);
    try {
      const mapped = await loadErnieWeights(ckpt, config, { strict: true });
      const r = mapped.report;
      expect([r.missing, r.mismatched, r.unmapped, r.ignored]).toEqual([[], [], [], []]);
      // Every expert's own tensors are read.
      expect([...r.consumed].sort()).toEqual(ckpt.names().sort());
      const decoder = ernieTextExpectedParameters(config.text);
      expect(mapped.decoder.names()).toEqual(decoder.map((p) => p.name).sort());
      for (const p of decoder) expect([p.name, mapped.decoder.get(p.name).shape]).toEqual([p.name, p.shape]);
      expect(mapped.vision.names()).toEqual(
        expectedErnieVisionParameters(config.vision)
          .map((p) => p.name)
          .sort(),
      );
    } finally {
      await ckpt.close();
    }
  });
});

describe('loadGraniteWeights on test-fixtures/granite-tiny', () => {
  it("the derived lists, mapped strictly, use every tensor but SigLIP's post_layernorm", async () => {
    const dir = join(FIXTURES, 'granite-tiny');
    const hf = await json(dir);
    const [config, text] = [granite4VisionConfig(hf), graniteTextConfigFromHf(hf)];
    const ckpt = await Checkpoint.open(dir);
    try {
      const mapped = await loadGraniteWeights(ckpt, config, text, { strict: true });
      const r = mapped.report;
      expect([r.missing, r.mismatched, r.unmapped]).toEqual([[], [], []]);
      expect([...r.ignored].sort()).toEqual(['model.vision_tower.post_layernorm.bias', 'model.vision_tower.post_layernorm.weight']);
      expect(mapped.vision.names()).toEqual(
        expectedSiglipVisionParameters(config.vision)
          .map((p) => p.name)
          .sort(),
      );
      // The projectors as the vision encoder reads them: 4 layerwise + 4 spatial window Q-Formers and the newline row.
      const projectors = graniteComponents(config, text).projectors.parameters.map((p) => p.name);
      expect(projectors).toContain('image_newline');
      expect(new Set(projectors.map((n) => n.split('.').slice(0, 2).join('.')))).toEqual(
        new Set(['image_newline', ...[0, 1, 2, 3].flatMap((k) => [`layerwise_projectors.${k}`, `spatial_projectors.${k}`])]),
      );
      expect(mapped.projectors.names()).toEqual([...projectors].sort());
    } finally {
      await ckpt.close();
    }
  });
});
