import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ERNIE_PROCESSOR, GRANITE_PROCESSOR, PROCESSOR_FAMILIES } from './families/index.js';
import { Processor } from './processor.js';
import { int64, type ProcessorFamily } from './processor-family.js';
import { fixturePath } from './test-utils/fixtures.js';

const temp = mkdtempSync(join(tmpdir(), 'vlmkit-processor-family-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

/** The Granite fixture folder with processor_config.json's processor_class replaced. */
function folderWithClass(name: string, processorClass: string): string {
  const dir = join(temp, name);
  cpSync(fixturePath('granite'), dir, { recursive: true });
  const config = { downsample_rate: '2/4', patch_size: 8, processor_class: processorClass };
  writeFileSync(join(dir, 'processor_config.json'), JSON.stringify(config));
  return dir;
}

/** A family this package does not know: one placeholder token per image, no pixels. */
const TOY: ProcessorFamily = {
  modelType: 'toy_vlm',
  name: 'Toy VLM',
  processorClass: 'ToyVlmProcessor',
  imageProcessorTypes: /^LlavaNextImageProcessor$/,
  imageProcessorPrefix: undefined,
  video: false,
  open: async () => ({
    media: async (images) => ({
      tensors: {
        image_sizes: int64(
          images.flatMap((i) => [i.height, i.width]),
          [images.length, 2],
        ),
      },
      expansions: [{ modality: 'image', token: '<image>', counts: images.map(() => 1) }],
    }),
    tokenTensors: () => ({}),
  }),
};

describe('Processor.fromPretrained chooses among the families it is given', () => {
  it('a family from outside the package is chosen by its processor_class and its rules process the images', async () => {
    const dir = folderWithClass('toy', 'ToyVlmProcessor');
    const p = await Processor.fromPretrained(dir, [...PROCESSOR_FAMILIES, TOY]);
    expect(p.kind).toBe('toy_vlm');
    const image = { width: 3, height: 2, data: new Uint8Array(18) };
    const out = await p.process({ text: 'a <image> b', images: [image] });
    expect(Array.from(out.image_sizes!.data, Number)).toEqual([2, 3]);
    // The known families alone cannot tell which processor this folder needs.
    await expect(Processor.fromPretrained(dir)).rejects.toMatchObject({ code: 'INVALID_PROCESSOR_CONFIG' });
  });

  it("a model's own family refuses a folder whose processor is another family's, naming only its own", async () => {
    const e = await Processor.fromPretrained(fixturePath('ernie'), GRANITE_PROCESSOR).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'INVALID_PROCESSOR_CONFIG' });
    expect((e as Error).message).toMatch(/supported: Granite4VisionProcessor \(granite4_vision\)$/);
    expect((await Processor.fromPretrained(fixturePath('ernie'), ERNIE_PROCESSOR)).kind).toBe('ernie4_5_vl_moe');
  });

  it('videos are refused by the family flag, with the family name', async () => {
    const p = await Processor.fromPretrained(fixturePath('granite'));
    const video = { frames: [{ width: 2, height: 2, data: new Uint8Array(12) }], fps: 1 };
    await expect(p.process({ text: 'x', videos: [video] })).rejects.toThrow('Granite 4 Vision takes images only, not videos');
    await expect(p.processChat([{ role: 'user', content: [{ type: 'audio' }] }])).rejects.toThrow(
      'granite4_vision takes text, images only',
    );
  });
});
