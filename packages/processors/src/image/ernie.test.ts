import { readdirSync } from 'node:fs';
import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { ProcessorError } from '../errors.js';
import { fixturePath, int64Rows, maxAbsDiff, readF32, readJson, readSafetensors } from '../test-utils/fixtures.js';
import { decodeImage } from './decode.js';
import { ernieImageProcessorConfig, ernieSmartResize, processErnieImages } from './ernie.js';

interface Case {
  name: string;
  images: string[];
  pixel_values: { file: string; shape: number[] };
  image_grid_thw: number[][];
}

describe('processErnieImages matches HF Ernie4_5_VLMoeImageProcessorPil', () => {
  const dir = ['image-processors', 'ernie'];
  const config = ernieImageProcessorConfig(readJson(...dir, 'preprocessor_config.json'));
  it.each(readJson<Case[]>(...dir, 'index.json').map((c) => [c.name, c] as const))('%s (own small config)', async (_, c) => {
    const images = await Promise.all(c.images.map((f) => decodeImage(fixturePath(...dir, f))));
    const out = processErnieImages(images, config);
    expect(out.pixelValuesShape).toEqual(c.pixel_values.shape);
    expect(out.imageGridThw).toEqual(c.image_grid_thw);
    expect(maxAbsDiff(out.pixelValues, readF32(...dir, c.pixel_values.file))).toBe(0);
  });

  // Helper P0's end-to-end cases (test-fixtures/processors/ernie): the image part of their outputs.
  const cases = readdirSync(fixturePath('ernie', 'cases')).filter(
    (n) => readJson<{ images?: string[] }>('ernie', 'cases', n, 'case.json').images?.length,
  );
  const p0 = ernieImageProcessorConfig(readJson('ernie', 'preprocessor_config.json'));
  it('has the processor cases with images', () => expect(cases.length).toBeGreaterThanOrEqual(4));
  it.each(cases)('%s (fixture preprocessor_config.json)', async (name) => {
    const c = readJson<{ images: string[] }>('ernie', 'cases', name, 'case.json');
    const images = await Promise.all(c.images.map((f) => decodeImage(fixturePath(f))));
    const out = processErnieImages(images, p0);
    const expected = readSafetensors('ernie', 'cases', name, 'expected.safetensors');
    expect(out.pixelValuesShape).toEqual(expected.pixel_values!.shape);
    expect(out.imageGridThw).toEqual(int64Rows(expected.image_grid_thw!, 3));
    expect(maxAbsDiff(out.pixelValues, expected.pixel_values!.data as Float32Array)).toBeLessThanOrEqual(1e-5);
  });
});

describe('ernieSmartResize', () => {
  it('rounds halves to even as Python round() does', () => {
    // 42 / 28 = 1.5 -> 2, 70 / 28 = 2.5 -> 2 (Math.round would give 3)
    expect(ernieSmartResize(42, 70, 28, 56 * 56, 28 * 28 * 1280)).toEqual([56, 56]);
  });
  it('scales down to max_pixels and up to min_pixels in multiples of the factor', () => {
    expect(ernieSmartResize(1000, 2000, 28, 56 * 56, 28 * 28 * 100)).toEqual([196, 392]);
    expect(ernieSmartResize(10, 20, 28, 56 * 56, 28 * 28 * 100)).toEqual([56, 84]);
  });
  it('refuses aspect ratios over 200', () => {
    expect(() => ernieSmartResize(1, 201, 28, 1, 1e9)).toThrow(ProcessorError);
  });
});

describe('ernieImageProcessorConfig', () => {
  it('takes HF defaults and names bad fields', () => {
    const c = ernieImageProcessorConfig({});
    expect([c.patchSize, c.mergeSize, c.minPixels, c.maxPixels, c.resample]).toEqual([14, 2, 3136, 28 * 28 * 6177, 'bicubic']);
    expect(() => ernieImageProcessorConfig({ size: { shortest_edge: 0 } })).toThrow(ConfigError);
    expect(() => ernieImageProcessorConfig({ resample: 0 })).toThrow(/resample 0 \(PIL NEAREST\) is not supported/);
  });
});
