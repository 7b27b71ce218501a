import { fields } from '@vlmkit/config';
import { MAX_PROCESSED_PIXELS, ProcessorError, refuseNullSettings, type SettingsSource } from '../errors.js';
import type { RgbImage } from '../image/decode.js';
import { ernieSmartResize } from '../image/ernie.js';
import { PIXEL_SETTING_KEYS, type PixelNormalization, readNormalization, readResample } from '../image/pixels.js';
import { decodeVideo } from './decode.js';
import { torchResizeBicubicUint8 } from './torch-resize.js';

/** A decoded video: its frames in order (8-bit RGB, all the same size) and, for fps sampling, its frame rate. */
export interface VideoFrames {
  /** What errors call the video (decodeVideo sets the file's path); default its index in the list. */
  readonly name?: string;
  readonly frames: readonly RgbImage[];
  /** Frames per second of `frames` (HF VideoMetadata.fps). */
  readonly fps?: number;
}

/** How many frames to take: HF's `fps` / `num_frames` video kwargs (at most one). */
export interface VideoSampling {
  fps?: number;
  numFrames?: number;
}

/** What Ernie4_5_VLMoeVideoProcessor reads from video_preprocessor_config.json. */
export interface ErnieVideoProcessorConfig {
  readonly patchSize: number;
  readonly mergeSize: number;
  /** Always 2: frames are paired by the model (HF refuses anything else). */
  readonly temporalPatchSize: number;
  readonly minPixels: number;
  readonly maxPixels: number;
  readonly minFrames: number;
  readonly maxFrames: number;
  readonly numFrames: number | undefined;
  readonly fps: number | undefined;
  readonly doSampleFrames: boolean;
  readonly doResize: boolean;
  readonly normalization: PixelNormalization;
}

const FROM = 'HF Ernie4_5_VLMoeVideoProcessor';

/** The most frames times pixels per frame one video may be processed at, whatever a config asks (2^28). */
export const MAX_VIDEO_PIXELS = 2 ** 28;

/**
 * Reads ERNIE video processor settings: video_preprocessor_config.json, the `video_processor`
 * object HF's save_pretrained nests in processor_config.json, or preprocessor_config.json (HF's
 * fallback); `source` names which, for errors. `draw_on_frames` (timestamps drawn on every frame
 * with a TrueType font, HF's default) is refused: the drawing cannot be reproduced pixel for pixel.
 * Sizes past MAX_PROCESSED_PIXELS per frame, or MAX_VIDEO_PIXELS per video, are refused before any
 * frame is touched.
 */
export function ernieVideoProcessorConfig(
  json: unknown,
  source: SettingsSource = { file: 'video_preprocessor_config.json' },
): ErnieVideoProcessorConfig {
  const c = fields(json, `ERNIE ${source.file}`, source.key);
  refuseNullSettings(c, [
    'patch_size',
    'merge_size',
    'temporal_patch_size',
    'size',
    'min_frames',
    'max_frames',
    'do_sample_frames',
    'do_resize',
    ...PIXEL_SETTING_KEYS,
  ]);
  if (c.bool('draw_on_frames', { default: true, from: FROM })) {
    c.fail(
      'UNSUPPORTED_CONFIG',
      'draw_on_frames',
      'is true (HF draws each frame timestamp with a font, which vlmkit does not reproduce); set "draw_on_frames": false to process videos.',
    );
  }
  const temporalPatchSize = c.int('temporal_patch_size', { default: 2, from: FROM });
  if (temporalPatchSize !== 2)
    c.fail('INVALID_CONFIG', 'temporal_patch_size', 'must be 2 (HF: ERNIE 4.5 VL only supports a temporal patch size of 2).');
  if (c.has('resample') && readResample(c, 'bicubic') !== 'bicubic') {
    c.fail('UNSUPPORTED_CONFIG', 'resample', 'only 3 (BICUBIC) is supported for videos (torchvision resize).');
  }
  const size = c.optionalObj('size');
  if (size !== undefined && (!size.has('shortest_edge') || !size.has('longest_edge'))) {
    c.fail('INVALID_CONFIG', 'size', `must have shortest_edge and longest_edge (HF), found ${JSON.stringify(Object.keys(size.json))}.`);
  }
  const pixels = { max: MAX_PROCESSED_PIXELS };
  const minPixels = size ? size.int('shortest_edge', pixels) : 299 * 28 * 28;
  const maxPixels = size ? size.int('longest_edge', pixels) : 1196 * 28 * 28;
  // One sampled frame makes HF's video processor fail (a 3-d tensor where it permutes 4 dims).
  const maxFrames = c.int('max_frames', { default: 180, from: FROM, min: 2 });
  const frames = Math.max(maxFrames, c.optionalInt('num_frames', { min: 2 }) ?? 0);
  if (frames * Math.max(minPixels, maxPixels) > MAX_VIDEO_PIXELS) {
    c.fail(
      'INVALID_CONFIG',
      c.has('num_frames') && frames > maxFrames ? 'num_frames' : 'max_frames',
      `${frames} frames of up to ${Math.max(minPixels, maxPixels)} pixels is over ${MAX_VIDEO_PIXELS} pixels per video, the most vlmkit processes.`,
    );
  }
  return {
    patchSize: c.int('patch_size', { default: 14, from: FROM, max: 256 }),
    mergeSize: c.int('merge_size', { default: 2, from: FROM, max: 8 }),
    temporalPatchSize,
    minPixels,
    maxPixels,
    minFrames: c.int('min_frames', { default: 16, from: FROM }),
    maxFrames,
    numFrames: c.optionalInt('num_frames', { min: 2 }),
    fps: c.optionalPositive('fps'),
    doSampleFrames: c.bool('do_sample_frames', { default: true, from: FROM }),
    doResize: c.bool('do_resize', { default: true, from: FROM }),
    normalization: readNormalization(c, FROM),
  };
}

/**
 * Ernie4_5_VLMoeVideoProcessor.sample_frames: `num_frames`, else total / fps_video * fps, else all,
 * clamped to [min_frames, max_frames] and the video's length, then
 * `torch.arange(0, total, total / num_frames).int()`.
 */
export function ernieSampleFrameIndices(
  totalFrames: number,
  videoFps: number | undefined,
  config: ErnieVideoProcessorConfig,
  sampling: VideoSampling = {},
): number[] {
  const fps = sampling.fps ?? (sampling.numFrames === undefined ? config.fps : undefined);
  const requested = sampling.numFrames ?? (sampling.fps === undefined ? config.numFrames : undefined);
  if (fps !== undefined && requested !== undefined) {
    throw new ProcessorError('INVALID_INPUT', 'video sampling: give fps or numFrames, not both (HF: mutually exclusive)');
  }
  let n: number;
  if (requested !== undefined) {
    if (requested < config.minFrames || requested > config.maxFrames) {
      throw new ProcessorError('INVALID_INPUT', `numFrames must be ${config.minFrames} <= x <= ${config.maxFrames}, got ${requested}`);
    }
    n = requested;
  } else {
    if (fps !== undefined && videoFps === undefined) {
      throw new ProcessorError('INVALID_INPUT', 'sampling a video by fps needs the frame rate of its frames (VideoFrames.fps)');
    }
    n = fps !== undefined ? (totalFrames / videoFps!) * fps : totalFrames;
    n = Math.min(Math.max(n, config.minFrames), config.maxFrames, totalFrames);
  }
  if (n > totalFrames) {
    throw new ProcessorError('INVALID_INPUT', `the video has ${totalFrames} frames, fewer than the ${n} to sample; lower numFrames or fps`);
  }
  // torch.arange with a float step: length ceil(end / step), values start + i * step in double, stored as float32.
  const step = totalFrames / n;
  const count = Math.ceil(totalFrames / step);
  return Array.from({ length: count }, (_, i) => Math.trunc(Math.fround(i * step)));
}

/** The model inputs for a list of videos, as HF's processor returns them. */
export interface ErnieVideoInputs {
  /** [sum of frames * patches per frame, 3 * patchSize^2] float32. */
  readonly pixelValuesVideos: Float32Array;
  readonly pixelValuesVideosShape: readonly [number, number];
  /** Per video [frames, h, w] in patches (frames after sampling and padding to even). */
  readonly videoGridThw: readonly (readonly [number, number, number])[];
}

/**
 * Ernie4_5_VLMoeVideoProcessor (torchvision backend): frames sampled, an odd count padded with a
 * copy of the last frame, each frame smart-resized (torchvision uint8 bicubic), rescaled and
 * normalized in float32 with the fused mean/std (TorchvisionBackend.rescale_and_normalize), then
 * patchified per frame in merge-window order (view + permute(0, 1, 3, 6, 4, 7, 2, 5, 8)).
 */
export function processErnieVideos(
  videos: readonly VideoFrames[],
  config: ErnieVideoProcessorConfig,
  sampling: VideoSampling = {},
): ErnieVideoInputs {
  const { patchSize: p, mergeSize: m } = config;
  const perVideo = videos.map((v, vi) => {
    const name = `video ${v.name ?? vi}`;
    if (v.frames.length === 0) throw new ProcessorError('INVALID_INPUT', `${name} has no frames (none decoded or none selected)`);
    const { width, height } = v.frames[0]!;
    if (v.frames.some((f) => f.width !== width || f.height !== height)) {
      throw new ProcessorError('INVALID_INPUT', `${name}: frames differ in size`);
    }
    // HF's video processor guesses the channel axis of [T, H, W, 3] frames from the shape
    // (image_utils.infer_channel_dimension_format): a height of 1 or 3 reads as channels-first, another picture.
    if (height === 1 || height === 3) {
      throw new ProcessorError(
        'INVALID_SIZE',
        `${name}: ${width}x${height} frames; HF's video processor reads frames ${height} pixel${height === 1 ? '' : 's'} high as ` +
          'channels-first (another picture), so vlmkit cannot match it: pad or resize the frames first.',
      );
    }
    let frames = config.doSampleFrames
      ? ernieSampleFrameIndices(v.frames.length, v.fps, config, sampling).map((i) => v.frames[i]!)
      : [...v.frames];
    if (frames.length % 2 !== 0) frames = [...frames, frames.at(-1)!];
    const [h, w] = config.doResize
      ? ernieSmartResize(height, width, p * m, config.minPixels, config.maxPixels, `${name} frames`)
      : [height, width];
    if (h % (p * m) !== 0 || w % (p * m) !== 0) {
      throw new ProcessorError('INVALID_SIZE', `${name}: ${width}x${height} frames are not a multiple of ${p * m}; enable do_resize`);
    }
    return { frames: frames.map((f) => torchResizeBicubicUint8({ ...f, channels: 3 }, w, h)), h, w };
  });
  const dim = 3 * p * p;
  const grids = perVideo.map((v) => [v.frames.length, v.h / p, v.w / p] as const);
  const rows = grids.reduce((a, [t, gh, gw]) => a + t * gh * gw, 0);
  const out = new Float32Array(rows * dim);
  const lut = normalizeLut(config.normalization);
  let row = 0;
  for (const v of perVideo) {
    for (const f of v.frames) {
      for (let bh = 0; bh < v.h / p / m; bh++) {
        for (let bw = 0; bw < v.w / p / m; bw++) {
          for (let mh = 0; mh < m; mh++) {
            for (let mw = 0; mw < m; mw++) {
              let o = row * dim;
              for (let c = 0; c < 3; c++) {
                const table = lut[c]!;
                for (let py = 0; py < p; py++) {
                  const y = (bh * m + mh) * p + py;
                  const x0 = (bw * m + mw) * p;
                  for (let px = 0; px < p; px++) out[o++] = table[f.data[(y * v.w + x0 + px) * 3 + c]!]!;
                }
              }
              row++;
            }
          }
        }
      }
    }
  }
  return { pixelValuesVideos: out, pixelValuesVideosShape: [rows, dim], videoGridThw: grids };
}

/**
 * Per channel, the float32 value of each uint8 level as TorchvisionBackend.rescale_and_normalize
 * computes it: with rescale and normalize both on, mean and std are divided by the rescale factor
 * (float32 tensors times 1 / rescale_factor) and `(x - mean) / std` runs in float32.
 */
export function normalizeLut(n: PixelNormalization): Float32Array[] {
  const f = Math.fround;
  return [0, 1, 2].map((c) => {
    const lut = new Float32Array(256);
    let mean = f(n.imageMean[c]!);
    let std = f(n.imageStd[c]!);
    if (n.doRescale && n.doNormalize) {
      mean = f(mean * f(1 / n.rescaleFactor));
      std = f(std * f(1 / n.rescaleFactor));
    }
    for (let v = 0; v < 256; v++) {
      if (n.doNormalize) lut[v] = f(f(v - mean) / std);
      else lut[v] = n.doRescale ? f(v * f(n.rescaleFactor)) : v;
    }
    return lut;
  });
}

/**
 * Videos as HF's video processor takes them: decoded frames are sampled by processErnieVideos; a
 * file is decoded as fetch_videos does it, the sampled indices computed from the container's frame
 * count and rate first (sample_indices_fn) and only those frames decoded, then not sampled again.
 */
export async function processErnieVideoInputs(
  videos: readonly (string | VideoFrames)[],
  config: ErnieVideoProcessorConfig,
  sampling: VideoSampling | undefined,
): Promise<ErnieVideoInputs> {
  if (videos.every((v) => typeof v !== 'string')) return processErnieVideos(videos as VideoFrames[], config, sampling);
  const parts: ErnieVideoInputs[] = [];
  for (const v of videos) {
    if (typeof v !== 'string') {
      parts.push(processErnieVideos([v], config, sampling));
      continue;
    }
    const decoded = await decodeVideo(
      v,
      config.doSampleFrames ? { frames: (info) => ernieSampleFrameIndices(info.totalFrames, info.fps, config, sampling) } : {},
    );
    parts.push(processErnieVideos([decoded], { ...config, doSampleFrames: false }, sampling));
  }
  const pixelValuesVideos = new Float32Array(parts.reduce((n, p) => n + p.pixelValuesVideos.length, 0));
  let offset = 0;
  for (const p of parts) {
    pixelValuesVideos.set(p.pixelValuesVideos, offset);
    offset += p.pixelValuesVideos.length;
  }
  return {
    pixelValuesVideos,
    pixelValuesVideosShape: [parts.reduce((n, p) => n + p.pixelValuesVideosShape[0], 0), parts[0]!.pixelValuesVideosShape[1]],
    videoGridThw: parts.flatMap((p) => p.videoGridThw),
  };
}
