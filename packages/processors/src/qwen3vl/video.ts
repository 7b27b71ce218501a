// Qwen3-VL's video processor (HF Qwen3VLVideoProcessor, torchvision backend): frames sampled at `fps` per second
// with np.linspace, resized together by a smart_resize that counts the frames in the pixel budget, patch rows of
// temporal_patch_size consecutive frames, and a timestamp per temporal patch for the prompt.
import { fields } from '@vlmkit/config';
import { MAX_PROCESSED_PIXELS, ProcessorError, refuseNullSettings, type SettingsSource } from '../errors.js';
import { roundHalfEven } from '../image/ernie.js';
import { PIXEL_SETTING_KEYS, type PixelNormalization, readNormalization, readResample } from '../image/pixels.js';
import { decodeVideo } from '../video/decode.js';
import { MAX_VIDEO_PIXELS, normalizeLut, type VideoFrames, type VideoSampling } from '../video/ernie.js';
import { torchResizeBicubicUint8 } from '../video/torch-resize.js';

/** What Qwen3VLVideoProcessor reads from video_preprocessor_config.json. */
export interface Qwen3VLVideoProcessorConfig {
  readonly patchSize: number;
  readonly mergeSize: number;
  /** Consecutive frames per patch row (2): an odd frame count is padded with the last frame. */
  readonly temporalPatchSize: number;
  readonly minPixels: number;
  readonly maxPixels: number;
  readonly minFrames: number;
  readonly maxFrames: number;
  /** Frames sampled per second of video (HF default 2); undefined when the settings say null. */
  readonly fps: number | undefined;
  readonly numFrames: number | undefined;
  readonly doSampleFrames: boolean;
  readonly doResize: boolean;
  /** qwen-vl-utils' per-frame pixel cap (`cap_pixels_per_frame`; HF 5.17 default off) and its token ceiling. */
  readonly capPixelsPerFrame: boolean;
  readonly maxVideoTokens: number;
  readonly normalization: PixelNormalization;
}

const FROM = 'HF Qwen3VLVideoProcessor';
/** HF IMAGENET_STANDARD_MEAN / _STD, the class defaults. */
const STANDARD = { imageMean: [0.5, 0.5, 0.5], imageStd: [0.5, 0.5, 0.5] };

/**
 * Reads Qwen3-VL video processor settings (video_preprocessor_config.json, the `video_processor` object of
 * processor_config.json, or preprocessor_config.json; `source` names which) with HF's class defaults. A pixel
 * budget (`size`) past MAX_VIDEO_PIXELS per video is refused here, a frame size past MAX_PROCESSED_PIXELS
 * when smart_resize picks it, before any frame is resized.
 */
export function qwen3vlVideoProcessorConfig(
  json: unknown,
  source: SettingsSource = { file: 'video_preprocessor_config.json' },
): Qwen3VLVideoProcessorConfig {
  const c = fields(json, `Qwen3-VL ${source.file}`, source.key);
  // fps, num_frames and cap_pixels_per_frame may be null: HF reads null as "not set" for those.
  refuseNullSettings(c, [
    'patch_size',
    'merge_size',
    'temporal_patch_size',
    'size',
    'min_frames',
    'max_frames',
    'do_sample_frames',
    'do_resize',
    'max_video_tokens',
    ...PIXEL_SETTING_KEYS,
  ]);
  if (c.has('resample') && readResample(c, 'bicubic') !== 'bicubic') {
    c.fail('UNSUPPORTED_CONFIG', 'resample', 'only 3 (BICUBIC) is supported for videos (torchvision resize).');
  }
  const size = c.optionalObj('size');
  if (size !== undefined && (!size.has('shortest_edge') || !size.has('longest_edge'))) {
    c.fail('INVALID_CONFIG', 'size', `must have shortest_edge and longest_edge (HF), found ${JSON.stringify(Object.keys(size.json))}.`);
  }
  // Unlike the image processors' size, these bound all sampled frames together (frames x height x width).
  const budget = { max: MAX_VIDEO_PIXELS };
  const minPixels = size ? size.int('shortest_edge', budget) : 128 * 32 * 32;
  const maxPixels = size ? size.int('longest_edge', budget) : 32 * 32 * 768;
  const maxFrames = c.int('max_frames', { default: 768, from: FROM });
  const numFrames = c.optionalInt('num_frames');
  return {
    patchSize: c.int('patch_size', { default: 16, from: FROM, max: 256 }),
    mergeSize: c.int('merge_size', { default: 2, from: FROM, max: 8 }),
    temporalPatchSize: c.int('temporal_patch_size', { default: 2, from: FROM, max: 16 }),
    minPixels,
    maxPixels,
    minFrames: c.int('min_frames', { default: 4, from: FROM }),
    maxFrames,
    fps: c.json.fps === null ? undefined : (c.optionalPositive('fps') ?? 2),
    numFrames,
    doSampleFrames: c.bool('do_sample_frames', { default: true, from: FROM }),
    doResize: c.bool('do_resize', { default: true, from: FROM }),
    capPixelsPerFrame: c.json.cap_pixels_per_frame === null ? false : c.bool('cap_pixels_per_frame', { default: false, from: FROM }),
    maxVideoTokens: c.int('max_video_tokens', { default: 768, from: FROM }),
    normalization: readNormalization(c, FROM, STANDARD),
  };
}

/**
 * Qwen3VLVideoProcessor.sample_frames: `num_frames`, else total / fps_video * fps (truncated) clamped to
 * [min_frames, max_frames] and the video's length, else every frame up to max_frames; then
 * `np.linspace(0, total - 1, n).round()` (halves to even). HF always passes the settings' fps, so asking
 * for numFrames needs settings whose fps is null (HF raises otherwise).
 */
export function qwen3vlSampleFrameIndices(
  totalFrames: number,
  videoFps: number | undefined,
  config: Qwen3VLVideoProcessorConfig,
  sampling: VideoSampling = {},
): number[] {
  const fps = sampling.fps ?? config.fps;
  const requested = sampling.numFrames ?? config.numFrames;
  if (fps !== undefined && requested !== undefined) {
    throw new ProcessorError(
      'INVALID_INPUT',
      `video sampling: numFrames ${requested} and fps ${fps} both apply (HF: mutually exclusive); ` +
        (sampling.fps === undefined ? 'the processor settings give fps: ask for fps instead, or set "fps": null.' : 'give one.'),
    );
  }
  let n: number;
  if (requested !== undefined) n = requested;
  else if (fps !== undefined) {
    if (videoFps === undefined) {
      throw new ProcessorError(
        'INVALID_INPUT',
        'sampling a video by fps needs the frame rate of its frames (VideoFrames.fps); HF would assume 24',
      );
    }
    n = Math.min(Math.max(Math.trunc((totalFrames / videoFps) * fps), config.minFrames), config.maxFrames, totalFrames);
  } else n = Math.min(Math.max(totalFrames, config.minFrames), config.maxFrames);
  if (n <= 1) return n === 1 ? [0] : [];
  // np.linspace: i * step with step = (stop - start) / (n - 1), the last value exactly stop.
  const step = (totalFrames - 1) / (n - 1);
  return Array.from({ length: n }, (_, i) => (i === n - 1 ? totalFrames - 1 : roundHalfEven(i * step)));
}

/**
 * Qwen3VLProcessor._calculate_timestamps: the seconds of each temporal patch, the mean of its first and last
 * frame's time (indices padded with the last one to a multiple of the temporal patch size).
 */
export function qwen3vlTimestamps(indices: readonly number[], videoFps: number, temporalPatchSize: number): number[] {
  const idx = [...indices];
  while (idx.length % temporalPatchSize !== 0) idx.push(idx.at(-1)!);
  const t = idx.map((i) => i / videoFps);
  const out: number[] = [];
  for (let i = 0; i < t.length; i += temporalPatchSize) out.push((t[i]! + t[i + temporalPatchSize - 1]!) / 2);
  return out;
}

/**
 * Python's `f"{x:.1f}"`: the exact binary value rounded to one decimal, halves to even (0.25 -> "0.2",
 * 1.25 -> "1.2") where JS `toFixed(1)` rounds them up. A tie at one decimal is a multiple of 0.05 that is
 * exact in binary, i.e. an odd multiple of 0.25.
 */
export function pythonFixed1(x: number): string {
  const q = x * 4;
  if (Number.isFinite(x) && Math.abs(x) < 2 ** 48 && Number.isInteger(q) && q % 2 !== 0) {
    const lower = Math.floor(x * 10); // exact: x * 10 = q * 2.5
    const n = lower % 2 === 0 ? lower : lower + 1;
    const sign = n < 0 ? '-' : '';
    const a = Math.abs(n);
    return `${sign}${Math.floor(a / 10)}.${a % 10}`;
  }
  return x.toFixed(1);
}

/**
 * Qwen3-VL's smart_resize for a video: sides too small for one factor scaled up first, then the nearest
 * multiples of `factor` (halves to even), shrunk or grown so that frames (rounded to the temporal factor)
 * times pixels stays within [minPixels, maxPixels].
 */
export function qwen3vlVideoSmartResize(
  numFrames: number,
  height: number,
  width: number,
  temporalFactor: number,
  factor: number,
  minPixels: number,
  maxPixels: number,
  what: string,
): [number, number] {
  if (numFrames < temporalFactor) {
    throw new ProcessorError(
      'INVALID_INPUT',
      `Qwen3-VL processor: ${what}: ${numFrames} sampled frame(s), fewer than temporal_patch_size ${temporalFactor} (HF refuses it); sample more frames.`,
    );
  }
  if (height < factor || width < factor) {
    const scale = Math.max(factor / height, factor / width);
    height = Math.trunc(height * scale);
    width = Math.trunc(width * scale);
  }
  if (Math.max(height, width) / Math.min(height, width) > 200) {
    throw new ProcessorError(
      'INVALID_SIZE',
      `Qwen3-VL processor: ${what}: ${width}x${height}, an aspect ratio over 200 (HF smart_resize refuses it); crop or pad it first.`,
    );
  }
  let hBar = roundHalfEven(height / factor) * factor;
  let wBar = roundHalfEven(width / factor) * factor;
  const tBar = roundHalfEven(numFrames / temporalFactor) * temporalFactor;
  if (tBar * hBar * wBar > maxPixels) {
    const beta = Math.sqrt((numFrames * height * width) / maxPixels);
    hBar = Math.max(factor, Math.floor(height / beta / factor) * factor);
    wBar = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (tBar * hBar * wBar < minPixels) {
    const beta = Math.sqrt(minPixels / (numFrames * height * width));
    hBar = Math.ceil((height * beta) / factor) * factor;
    wBar = Math.ceil((width * beta) / factor) * factor;
  }
  return [hBar, wBar];
}

/** The model inputs for a list of videos and, per video, its temporal patches' timestamps in seconds. */
export interface Qwen3VLVideoInputs {
  /** [sum of grid t * h * w, 3 * temporalPatchSize * patchSize^2] float32. */
  readonly pixelValuesVideos: Float32Array;
  readonly pixelValuesVideosShape: readonly [number, number];
  /** Per video [temporal patches, h, w] in patches. */
  readonly videoGridThw: readonly (readonly [number, number, number])[];
  /** Per video, one timestamp per temporal patch (what the prompt shows as `<t seconds>`). */
  readonly timestamps: readonly (readonly number[])[];
}

/** A video's frames to process: already sampled, with the indices they had in the video (for the timestamps). */
interface SampledVideo {
  readonly name: string;
  readonly frames: VideoFrames['frames'];
  readonly indices: readonly number[];
  readonly fps: number | undefined;
}

function sampled(v: VideoFrames, vi: number, config: Qwen3VLVideoProcessorConfig, sampling: VideoSampling): SampledVideo {
  const name = `video ${v.name ?? vi}`;
  if (v.frames.length === 0) throw new ProcessorError('INVALID_INPUT', `${name} has no frames (none decoded or none selected)`);
  const indices = config.doSampleFrames ? qwen3vlSampleFrameIndices(v.frames.length, v.fps, config, sampling) : v.frames.map((_, i) => i);
  return { name, frames: indices.map((i) => v.frames[i]!), indices, fps: v.fps };
}

/**
 * Qwen3VLVideoProcessor._preprocess on sampled frames: resized together (torchvision uint8 bicubic),
 * rescaled and normalized with the fused float32 mean/std, padded with the last frame to a multiple of
 * the temporal patch size, then patchified: rows in (temporal patch, merge-window row, column, row in
 * window, column in window) order, each row (channel, frame, row, column).
 */
function processSampled(videos: readonly SampledVideo[], config: Qwen3VLVideoProcessorConfig): Qwen3VLVideoInputs {
  const { patchSize: p, mergeSize: m, temporalPatchSize: tps } = config;
  const perVideo = videos.map((v) => {
    const { width, height } = v.frames[0]!;
    if (v.frames.some((f) => f.width !== width || f.height !== height)) {
      throw new ProcessorError('INVALID_INPUT', `${v.name}: frames differ in size`);
    }
    // HF guesses the channel axis of [T, H, W, 3] frames from the shape: a height of 1 or 3 reads as channels-first.
    if (height === 1 || height === 3) {
      throw new ProcessorError(
        'INVALID_SIZE',
        `${v.name}: ${width}x${height} frames; HF's video processor reads frames ${height} pixel${height === 1 ? '' : 's'} high as ` +
          'channels-first (another picture), so vlmkit cannot match it: pad or resize the frames first.',
      );
    }
    let [h, w] = [height, width];
    if (config.doResize) {
      let maxPixels = config.maxPixels;
      if (config.capPixelsPerFrame) {
        const perFrame = Math.max(
          Math.min(config.maxVideoTokens * p * m * p * m, Math.floor(config.maxPixels / v.frames.length)),
          Math.trunc(config.minPixels * 1.05),
        );
        maxPixels = perFrame * v.frames.length;
      }
      [h, w] = qwen3vlVideoSmartResize(v.frames.length, height, width, tps, p * m, config.minPixels, maxPixels, `${v.name} frames`);
    }
    if (h % (p * m) !== 0 || w % (p * m) !== 0) {
      throw new ProcessorError('INVALID_SIZE', `${v.name}: ${width}x${height} frames are not a multiple of ${p * m}; enable do_resize`);
    }
    if (h * w > MAX_PROCESSED_PIXELS) {
      throw new ProcessorError(
        'INVALID_SIZE',
        `${v.name}: frames of ${w}x${h} pixels (from the size budget over ${v.frames.length} frames) are over ${MAX_PROCESSED_PIXELS}, ` +
          'the most vlmkit processes per frame; lower size.longest_edge / shortest_edge or sample more frames.',
      );
    }
    const frames = v.frames.map((f) => torchResizeBicubicUint8({ ...f, channels: 3 }, w, h));
    while (frames.length % tps !== 0) frames.push(frames.at(-1)!);
    return { frames, h, w, timestamps: qwen3vlTimestamps(v.indices, timestampFps(v), tps) };
  });
  const dim = 3 * tps * p * p;
  const grids = perVideo.map((v) => [v.frames.length / tps, v.h / p, v.w / p] as const);
  const rows = grids.reduce((a, [t, gh, gw]) => a + t * gh * gw, 0);
  const out = new Float32Array(rows * dim);
  const lut = normalizeLut(config.normalization);
  let row = 0;
  for (const v of perVideo) {
    for (let t = 0; t < v.frames.length / tps; t++) {
      for (let bh = 0; bh < v.h / p / m; bh++) {
        for (let bw = 0; bw < v.w / p / m; bw++) {
          for (let mh = 0; mh < m; mh++) {
            for (let mw = 0; mw < m; mw++) {
              let o = row * dim;
              for (let c = 0; c < 3; c++) {
                const table = lut[c]!;
                for (let ft = 0; ft < tps; ft++) {
                  const data = v.frames[t * tps + ft]!.data;
                  for (let py = 0; py < p; py++) {
                    const base = (((bh * m + mh) * p + py) * v.w + (bw * m + mw) * p) * 3 + c;
                    for (let px = 0; px < p; px++) out[o++] = table[data[base + px * 3]!]!;
                  }
                }
              }
              row++;
            }
          }
        }
      }
    }
  }
  return {
    pixelValuesVideos: out,
    pixelValuesVideosShape: [rows, dim],
    videoGridThw: grids,
    timestamps: perVideo.map((v) => v.timestamps),
  };
}

function timestampFps(v: SampledVideo): number {
  if (v.fps === undefined) {
    throw new ProcessorError(
      'INVALID_INPUT',
      `${v.name}: Qwen3-VL writes each frame's time into the prompt, which needs the video's frame rate (VideoFrames.fps); HF would assume 24`,
    );
  }
  return v.fps;
}

/** Decoded videos: frames sampled (do_sample_frames) and processed. */
export function processQwen3VLVideos(
  videos: readonly VideoFrames[],
  config: Qwen3VLVideoProcessorConfig,
  sampling: VideoSampling = {},
): Qwen3VLVideoInputs {
  return processSampled(
    videos.map((v, i) => sampled(v, i, config, sampling)),
    config,
  );
}

/**
 * Videos as HF's video processor takes them: decoded frames are sampled here; a file is decoded as
 * fetch_videos does it, the indices chosen from the container's frame count and rate first
 * (sample_indices_fn) and only those frames decoded. The timestamps come from the chosen indices.
 */
export async function processQwen3VLVideoInputs(
  videos: readonly (string | VideoFrames)[],
  config: Qwen3VLVideoProcessorConfig,
  sampling: VideoSampling | undefined,
): Promise<Qwen3VLVideoInputs> {
  const prepared: SampledVideo[] = [];
  for (const [i, v] of videos.entries()) {
    if (typeof v !== 'string') {
      prepared.push(sampled(v, i, config, sampling ?? {}));
      continue;
    }
    let indices: readonly number[] | undefined;
    const decoded = await decodeVideo(
      v,
      config.doSampleFrames
        ? {
            frames: (info) => {
              indices = qwen3vlSampleFrameIndices(info.totalFrames, info.fps, config, sampling);
              return indices;
            },
          }
        : {},
    );
    // As read_video_pyav: each chosen frame decoded once (a repeated index does not repeat it), while the
    // timestamps read the chosen indices (HF's metadata.frames_indices).
    if (decoded.frames.length === 0) throw new ProcessorError('INVALID_INPUT', `video ${v} has no frames (none decoded or none selected)`);
    prepared.push({ name: `video ${v}`, frames: decoded.frames, indices: indices ?? decoded.frameIndices, fps: decoded.fps });
  }
  return processSampled(prepared, config);
}
