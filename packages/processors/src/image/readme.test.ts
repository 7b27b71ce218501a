import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
// The README's image example, with its comments turned into assertions.
import {
  anyresImageProcessorConfig,
  decodeImage,
  ernieImageProcessorConfig,
  ProcessorError,
  processAnyresImages,
  processErnieImages,
  resize,
} from '../index.js';
import { fixturePath } from '../test-utils/fixtures.js';

const json = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

it('README image example runs and gives the documented values', async () => {
  const image = await decodeImage(fixturePath('images/photo.jpg'));
  expect([image.width, image.height, image.data.length]).toEqual([160, 120, 160 * 120 * 3]);

  const ernie = ernieImageProcessorConfig(json(fixturePath('ernie/preprocessor_config.json')));
  const e = processErnieImages([image], ernie);
  expect(e.pixelValuesShape).toEqual([24, 588]);
  expect(e.imageGridThw).toEqual([[1, 4, 6]]);

  const granite = anyresImageProcessorConfig(json(fixturePath('granite/preprocessor_config.json')));
  const g = processAnyresImages([image], granite);
  expect(g.pixelValuesShape).toEqual([1, 7, 3, 64, 64]);
  expect(g.imageSizes).toEqual([[120, 160]]);
  expect(g.tilesPerImage).toEqual([7]);

  const small = resize({ ...image, channels: 3 }, 80, 60, 'bicubic');
  expect([small.width, small.height, small.data.length]).toEqual([80, 60, 80 * 60 * 3]);

  const err = await decodeImage(new Uint8Array([1, 2, 3]), { name: 'upload.bin' }).catch((x) => x);
  expect(err).toBeInstanceOf(ProcessorError);
  expect(err.code).toBe('NOT_AN_IMAGE');
});
