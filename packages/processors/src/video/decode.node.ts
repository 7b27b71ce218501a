// Node's video decoder: FFmpeg through the optional dependency node-av (decode.ts documents it).
import { resolve } from 'node:path';
import { ProcessorError } from '../errors.js';
import { DEFAULT_MAX_PIXELS } from '../image/limits.js';
import type { RgbImage } from '../image/rgb-image.js';
import { checkRegularFile, type InputKind } from '../input-file.node.js';
import {
  DEFAULT_MAX_VIDEO_BYTES,
  DEFAULT_MAX_VIDEO_PIXELS,
  type DecodedVideo,
  type DecodeVideoOptions,
  type VideoInfo,
} from './decode-options.js';

const VIDEO_FILE: InputKind = { what: 'video', unreadable: 'NOT_A_VIDEO', tooLarge: 'VIDEO_TOO_LARGE', option: 'maxBytes' };

type NodeAv = typeof import('node-av');

let loaded: Promise<NodeAv> | undefined;

/**
 * node-av (FFmpeg 8 prebuilt per platform, no install script needed) is an optional peer
 * dependency: image-only users do not download its ~170 MB of native code.
 */
function loadNodeAv(): Promise<NodeAv> {
  loaded ??= import('node-av').then(
    (av) => {
      // FFmpeg logs to stderr from its default level on; PyAV turns that logging off, and decodeVideo
      // reports failures as errors. Left alone when the application has set a level itself.
      if (av.Log.getLevel() === av.AV_LOG_INFO) av.Log.setLevel(av.AV_LOG_QUIET);
      return av;
    },
    (cause: unknown) => {
      loaded = undefined;
      throw new ProcessorError(
        'NO_VIDEO_DECODER',
        'decoding a video file needs the optional dependency node-av (FFmpeg for Node.js, prebuilt for ' +
          'Linux, macOS and Windows): `npm install node-av` (or `pnpm add node-av`) next to @vlmkit/processors. ' +
          'Or decode the video yourself and pass `{ frames, fps }` (8-bit RGB frames and the frame rate).',
        { cause },
      );
    },
  );
  return loaded;
}

/** decodeVideo (decode.ts) in Node. */
export async function decodeVideoFile(path: string, options: DecodeVideoOptions = {}): Promise<DecodedVideo> {
  await checkRegularFile(path, options.maxBytes ?? DEFAULT_MAX_VIDEO_BYTES, VIDEO_FILE);
  const av = await loadNodeAv();
  const limits = { maxPixels: options.maxPixels ?? DEFAULT_MAX_PIXELS, maxTotalPixels: options.maxTotalPixels ?? DEFAULT_MAX_VIDEO_PIXELS };
  const pick = options.frames;
  if (typeof pick !== 'function') {
    return decodePass(av, path, limits, () => (pick === undefined ? undefined : new Set(pick)));
  }
  // With a known frame count the wanted indices are known before decoding (HF calls
  // sample_indices_fn with the container's metadata first); otherwise count the frames first.
  let counted: number | undefined;
  const first = await decodePass(
    av,
    path,
    limits,
    (info) => (info.totalFrames > 0 ? new Set(pick(info)) : 'count'),
    (n) => {
      counted = n;
    },
  );
  if (counted === undefined) return first;
  const total = counted;
  return decodePass(av, path, limits, (info) => new Set(pick({ ...info, totalFrames: total })));
}

/**
 * One decode of the file: `choose` says from the stream's info which frame indices to keep (all
 * when undefined; none, only counting them, when 'count', and `onCount` gets the number).
 */
async function decodePass(
  av: NodeAv,
  path: string,
  { maxPixels, maxTotalPixels }: { maxPixels: number; maxTotalPixels: number },
  choose: (info: VideoInfo) => ReadonlySet<number> | undefined | 'count',
  onCount?: (frames: number) => void,
): Promise<DecodedVideo> {
  const fail = (what: string, code: number): ProcessorError =>
    new ProcessorError('NOT_A_VIDEO', `${path}: ${what} (FFmpeg: ${av.FFmpegError.strerror(code)})`);
  const tooLarge = (width: number, height: number) =>
    new ProcessorError(
      'VIDEO_TOO_LARGE',
      `${path}: ${width}x${height} frames are ${width * height} pixels, more than the limit of ${maxPixels}; ` +
        'downscale the video first or raise maxPixels.',
    );

  const format = new av.FormatContext();
  const codecContext = new av.CodecContext();
  const scaler = new av.SoftwareScaleContext();
  const packet = new av.Packet();
  const frame = new av.Frame();
  const openOptions = av.Dictionary.fromObject({ protocol_whitelist: 'file' });
  try {
    let ret = await format.openInput(`file:${resolve(path)}`, null, openOptions);
    if (ret < 0) throw fail('cannot open the file as a video', ret);
    ret = await format.findStreamInfo(null);
    if (ret < 0) throw fail('cannot read the stream information', ret);
    const streamIndex = format.findBestStream(av.AVMEDIA_TYPE_VIDEO);
    if (streamIndex < 0) throw fail('has no video stream', streamIndex);
    const stream = format.streams[streamIndex]!;
    const codec = av.Codec.findDecoder(stream.codecpar.codecId);
    if (codec === null) {
      throw new ProcessorError('NOT_A_VIDEO', `${path}: FFmpeg (node-av) has no decoder for codec id ${stream.codecpar.codecId}`);
    }
    const rate = stream.avgFrameRate;
    const fps = rate.num > 0 && rate.den > 0 ? rate.num / rate.den : undefined;
    const nbFrames = Number(stream.nbFrames);
    const info: VideoInfo = {
      width: stream.codecpar.width,
      height: stream.codecpar.height,
      fps,
      totalFrames: nbFrames,
      duration: fps !== undefined && nbFrames > 0 ? nbFrames / fps : 0,
      codec: codec.name ?? String(stream.codecpar.codecId),
    };
    if (info.width * info.height > maxPixels) throw tooLarge(info.width, info.height);

    codecContext.allocContext3(codec);
    ret = codecContext.parametersToContext(stream.codecpar);
    if (ret < 0) throw fail('cannot configure the decoder', ret);
    codecContext.pktTimebase = stream.timeBase;
    ret = await codecContext.open2(codec, null);
    if (ret < 0) throw fail(`cannot open the ${info.codec} decoder`, ret);

    const chosen = choose(info);
    const wanted = chosen === 'count' ? new Set<number>() : chosen;
    const last = wanted === undefined || chosen === 'count' ? Number.POSITIVE_INFINITY : Math.max(-1, ...wanted);

    scaler.allocContext();
    scaler.setOption('sws_flags', 'bilinear');
    packet.alloc();
    frame.alloc();
    const frames: RgbImage[] = [];
    const frameIndices: number[] = [];
    let index = 0;
    let kept = 0;
    let eof = false;
    while (!eof && index <= last) {
      ret = await format.readFrame(packet);
      if (ret === av.AVERROR_EOF) {
        eof = true;
        ret = await codecContext.sendPacket(null);
      } else if (ret < 0) {
        throw fail('cannot read a packet', ret);
      } else if (packet.streamIndex === streamIndex) {
        ret = await codecContext.sendPacket(packet);
        packet.unref();
      } else {
        packet.unref();
        continue;
      }
      if (ret < 0 && ret !== av.AVERROR_EAGAIN) throw fail('cannot decode a packet', ret);
      for (;;) {
        ret = await codecContext.receiveFrame(frame);
        if (ret === av.AVERROR_EAGAIN || ret === av.AVERROR_EOF) break;
        if (ret < 0) throw fail(`cannot decode frame ${index}`, ret);
        if (index <= last && (wanted === undefined || wanted.has(index))) {
          // The stream header's size is checked above; a frame may still change size mid-stream.
          if (frame.width * frame.height > maxPixels) throw tooLarge(frame.width, frame.height);
          kept += frame.width * frame.height;
          if (kept > maxTotalPixels) {
            throw new ProcessorError(
              'VIDEO_TOO_LARGE',
              `${path}: the ${frames.length + 1} frames kept so far are over ${maxTotalPixels} pixels in all; ` +
                'keep fewer frames (sample them: fps / numFrames) or raise maxTotalPixels.',
            );
          }
          frames.push(await toRgb(av, scaler, frame, path, index));
          frameIndices.push(index);
        }
        frame.unref();
        index++;
      }
    }
    if (chosen === 'count') onCount?.(index);
    return { name: path, frames, fps, frameIndices, info };
  } finally {
    openOptions.free();
    frame.free();
    packet.free();
    scaler.freeContext();
    codecContext.freeContext();
    await format.closeInput();
  }
}

/** PyAV `frame.to_ndarray(format="rgb24")`: a packed [height, width, 3] copy. */
async function toRgb(
  av: NodeAv,
  scaler: InstanceType<NodeAv['SoftwareScaleContext']>,
  frame: InstanceType<NodeAv['Frame']>,
  path: string,
  index: number,
): Promise<RgbImage> {
  const { width, height } = frame;
  // PyAV 18 VideoReformatter._reformat: transfer / primaries tags neutralized, so that swscale
  // converts the matrix and range only (no gamma or gamut conversion).
  frame.colorTrc = av.AVCOL_TRC_UNSPECIFIED;
  frame.colorPrimaries = av.AVCOL_PRI_UNSPECIFIED;
  const rgb = new av.Frame();
  rgb.alloc();
  try {
    rgb.format = av.AV_PIX_FMT_RGB24;
    rgb.width = width;
    rgb.height = height;
    let ret = rgb.allocBuffer();
    if (ret >= 0) ret = await scaler.scaleFrame(rgb, frame);
    if (ret < 0) {
      throw new ProcessorError('NOT_A_VIDEO', `${path}: cannot convert frame ${index} to RGB (FFmpeg: ${av.FFmpegError.strerror(ret)})`);
    }
    const planes = rgb.data;
    const stride = rgb.linesize[0]!;
    if (planes === null || planes[0] === undefined) throw new ProcessorError('NOT_A_VIDEO', `${path}: frame ${index} has no pixels`);
    const src = planes[0];
    const data = new Uint8Array(width * height * 3);
    for (let y = 0; y < height; y++) data.set(src.subarray(y * stride, y * stride + width * 3), y * width * 3);
    return { width, height, data };
  } finally {
    rgb.free();
  }
}
