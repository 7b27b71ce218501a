import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fixturePath, int64Rows, maxAbsDiff, readF32, readJson, readSafetensors } from '../test-utils/fixtures.js';
import { anyresImageProcessorConfig, patchOutputSize, processAnyresImages, selectBestResolution } from './anyres.js';
import { decodeImage } from './decode.js';

interface Case {
  name: string;
  images: string[];
  pixel_values: { file: string; shape: number[] };
  image_sizes: number[][];
}

describe('processAnyresImages matches HF LlavaNextImageProcessorPil', () => {
  const dir = ['image-processors', 'anyres'];
  const config = anyresImageProcessorConfig(readJson(...dir, 'preprocessor_config.json'));
  it.each(readJson<Case[]>(...dir, 'index.json').map((c) => [c.name, c] as const))('%s (own small config)', async (_, c) => {
    const images = await Promise.all(c.images.map((f) => decodeImage(fixturePath(...dir, f))));
    const out = processAnyresImages(images, config);
    expect(out.pixelValuesShape).toEqual(c.pixel_values.shape);
    expect(out.imageSizes).toEqual(c.image_sizes);
    expect(maxAbsDiff(out.pixelValues, readF32(...dir, c.pixel_values.file))).toBe(0);
  });

  // Helper P0's end-to-end Granite 4 Vision cases: the image part of their outputs.
  const cases = readdirSync(fixturePath('granite', 'cases')).filter(
    (n) => readJson<{ images?: string[] }>('granite', 'cases', n, 'case.json').images?.length,
  );
  const granite = anyresImageProcessorConfig(readJson('granite', 'preprocessor_config.json'));
  it('has the processor cases with images', () => expect(cases.length).toBeGreaterThanOrEqual(4));
  it.each(cases)('%s (fixture preprocessor_config.json)', async (name) => {
    const c = readJson<{ images: string[] }>('granite', 'cases', name, 'case.json');
    const images = await Promise.all(c.images.map((f) => decodeImage(fixturePath(f))));
    const out = processAnyresImages(images, granite);
    const expected = readSafetensors('granite', 'cases', name, 'expected.safetensors');
    expect(out.pixelValuesShape).toEqual(expected.pixel_values!.shape);
    expect(out.imageSizes).toEqual(int64Rows(expected.image_sizes!, 2));
    expect(maxAbsDiff(out.pixelValues, expected.pixel_values!.data as Float32Array)).toBeLessThanOrEqual(1e-5);
  });
});

describe('anyres geometry', () => {
  const pinpoints = [
    [336, 672],
    [672, 336],
    [672, 672],
  ] as const;
  it('selects the resolution that keeps most pixels, then wastes least', () => {
    expect(selectBestResolution([300, 700], pinpoints)).toEqual([336, 672]);
    expect(selectBestResolution([700, 300], pinpoints)).toEqual([672, 336]);
    expect(selectBestResolution([1000, 1000], pinpoints)).toEqual([672, 672]);
  });
  it('fits the image in the target keeping its aspect (ceil, capped at the target)', () => {
    expect(patchOutputSize([40, 90], [56, 84])).toEqual([38, 84]);
    expect(patchOutputSize([90, 40], [84, 56])).toEqual([84, 38]);
  });
  it('refuses empty pinpoints', () => {
    expect(() => selectBestResolution([10, 10], [])).toThrow(/image_grid_pinpoints is empty/);
  });
});
