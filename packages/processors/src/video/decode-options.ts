// decodeVideo's types and limits, shared by its Node implementation (decode.node.ts) and the callers.
import type { RgbImage } from '../image/rgb-image.js';

/** What the container says about a video stream, as HF's `VideoMetadata` (PyAV backend) reads it. */
export interface VideoInfo {
  readonly width: number;
  readonly height: number;
  /** The stream's average frame rate (PyAV `stream.average_rate`); undefined when the container has none. */
  readonly fps: number | undefined;
  /** The container's frame count (PyAV `stream.frames`, FFmpeg `nb_frames`); 0 when it does not say. */
  readonly totalFrames: number;
  /** `totalFrames / fps` in seconds, as HF's read_video_pyav computes it (0 when either is unknown). */
  readonly duration: number;
  /** FFmpeg's name of the stream's codec (h264, vp9, ...). */
  readonly codec: string;
}

/** A decoded video: the kept frames (8-bit RGB, decode order), their indices and the stream's info. */
export interface DecodedVideo {
  /** The file's path, so that errors about the frames name it. */
  readonly name: string;
  readonly frames: RgbImage[];
  /** `info.fps`, so a DecodedVideo is a `VideoFrames` the video processors take. */
  readonly fps: number | undefined;
  /** The index (in decode order) of each frame in `frames`. */
  readonly frameIndices: number[];
  readonly info: VideoInfo;
}

export interface DecodeVideoOptions {
  /**
   * Which frames to keep, by index in decode order: a list, or a function of the stream's info
   * (HF's `sample_indices_fn`). As read_video_pyav, each decoded frame whose index is in the list
   * is kept once, in decode order, and decoding stops after the largest index. When the container
   * does not give its frame count, the function is called after decoding every frame, with
   * `totalFrames` set to the number decoded. Default: every frame.
   */
  frames?: readonly number[] | ((info: VideoInfo) => readonly number[]);
  /** Refuse files larger than this (VIDEO_TOO_LARGE) before FFmpeg opens them; default DEFAULT_MAX_VIDEO_BYTES. */
  maxBytes?: number;
  /** Refuse frames of more pixels than this (VIDEO_TOO_LARGE) before converting them; default DEFAULT_MAX_PIXELS. */
  maxPixels?: number;
  /** Refuse keeping more pixels than this over all kept frames (VIDEO_TOO_LARGE); default DEFAULT_MAX_VIDEO_PIXELS. */
  maxTotalPixels?: number;
}

/** The most pixels decodeVideo keeps over all frames (2^30, 3 GiB of RGB: 500 frames of 1920x1080). */
export const DEFAULT_MAX_VIDEO_PIXELS = 2 ** 30;

/** The largest video file read (4 GiB): a file past it is refused before FFmpeg opens it. */
export const DEFAULT_MAX_VIDEO_BYTES = 4 * 1024 ** 3;
