import { afterEach, expect, it, vi } from 'vitest';
import { fixturePath } from '../test-utils/fixtures.js';

afterEach(() => {
  vi.doUnmock('node-av');
  vi.resetModules();
});

it('without node-av installed, decodeVideo throws NO_VIDEO_DECODER saying how to get a decoder', async () => {
  vi.resetModules();
  vi.doMock('node-av', () => {
    throw new Error("Cannot find package 'node-av'");
  });
  const { decodeVideo } = await import('./decode.js');
  const err = await decodeVideo(fixturePath('video/clip.mp4')).catch((e: unknown) => e);
  expect(err).toMatchObject({ name: 'ProcessorError', code: 'NO_VIDEO_DECODER' });
  expect((err as Error).message).toContain('npm install node-av');
  expect((err as Error).message).toContain('{ frames, fps }');
});
