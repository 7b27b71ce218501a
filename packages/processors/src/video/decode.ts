import { decodeVideoFile } from '#platform';
import type { DecodedVideo, DecodeVideoOptions } from './decode-options.js';

export {
  DEFAULT_MAX_VIDEO_BYTES,
  DEFAULT_MAX_VIDEO_PIXELS,
  type DecodedVideo,
  type DecodeVideoOptions,
  type VideoInfo,
} from './decode-options.js';

/**
 * Decodes a video file to 8-bit RGB frames, as HF transformers' `read_video_pyav` does (the PyAV
 * backend of `load_video`): FFmpeg decodes the first video stream in decode order, and each kept
 * frame is converted as PyAV's `frame.to_ndarray(format="rgb24")` converts it (bilinear swscale in
 * the frame's own colorspace and range). Frame rate and count are the stream's `avg_frame_rate` and
 * `nb_frames`, which HF's frame sampling reads.
 *
 * ```ts
 * const video = await decodeVideo('clip.mp4');
 * video.frames.length, video.fps; // 12, 6
 * ```
 *
 * Only a regular file of at most `maxBytes` is opened (a FIFO, a device or a directory is refused
 * without being opened), through FFmpeg's `file` protocol alone (a playlist cannot make it fetch
 * a URL), and frames of more than `maxPixels` are refused before conversion. When `frames` is a
 * function and the container has no frame count, the file is decoded twice: once to count the
 * frames, once to keep the chosen ones, so that memory holds the kept frames only.
 *
 * Throws ProcessorError NO_VIDEO_DECODER when node-av is not installed, NOT_A_VIDEO when the path is
 * not a regular file or FFmpeg cannot open it or it has no video stream, VIDEO_TOO_LARGE past a limit.
 * In the browser: UNSUPPORTED_PLATFORM (no video decoding there yet; pass decoded `{ frames, fps }`).
 */
export function decodeVideo(path: string, options: DecodeVideoOptions = {}): Promise<DecodedVideo> {
  return decodeVideoFile(path, options);
}
