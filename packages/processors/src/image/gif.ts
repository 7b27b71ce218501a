import { ProcessorError } from '../errors.js';
import type { RgbImage } from './rgb-image.js';

/**
 * The first frame of a GIF as Pillow 12 opens it (GifImagePlugin `_open` / `_seek(0)`), before
 * any pixel is decoded: the size (the logical screen, grown to hold the frame), the frame's
 * rectangle, its colour table and the LZW data's position.
 */
export interface GifFrame {
  readonly width: number;
  readonly height: number;
  /** The frame's rectangle inside the image. */
  readonly left: number;
  readonly top: number;
  readonly frameWidth: number;
  readonly frameHeight: number;
  readonly interlaced: boolean;
  /** The colour table Pillow uses (local, else global); undefined for mode L (none, or a grey ramp). */
  readonly palette: Uint8Array | undefined;
  /** The graphic control extension's transparent index: pixels outside the frame get it. */
  readonly transparency: number | undefined;
  /** LZW minimum code size (the byte before the image data). */
  readonly codeSize: number;
  /** Where the LZW sub-blocks start. */
  readonly dataOffset: number;
}

export function isGif(bytes: Uint8Array): boolean {
  const magic = String.fromCharCode(...bytes.subarray(0, 6));
  return magic === 'GIF87a' || magic === 'GIF89a';
}

/** Pillow's file reads: `read(n)` returns what is left when fewer than n bytes remain. */
class Reader {
  pos = 0;
  constructor(readonly bytes: Uint8Array) {}
  read(n: number): Uint8Array {
    const s = this.bytes.subarray(this.pos, Math.min(this.pos + n, this.bytes.length));
    this.pos += s.length;
    return s;
  }
  /** GifImageFile.data: the next sub-block, undefined at a zero-length one or the end of the file. */
  data(): Uint8Array | undefined {
    const s = this.read(1);
    return s.length > 0 && s[0]! > 0 ? this.read(s[0]!) : undefined;
  }
}

/** GifImageFile._is_palette_needed: a table that maps each index to its own grey is no palette. */
function paletteNeeded(p: Uint8Array): boolean {
  for (let i = 0; i + 2 < p.length; i += 3) if (!(i / 3 === p[i] && p[i] === p[i + 1] && p[i] === p[i + 2])) return true;
  return false;
}

/**
 * Reads the header and the blocks before the first image, following GifImagePlugin's parser
 * step for step (its quirks included: an extension whose first sub-block is empty swallows the
 * following bytes as sub-blocks, unknown bytes between blocks are skipped). Where Pillow raises
 * (a short header, descriptor or colour table, no image), this throws NOT_AN_IMAGE.
 */
export function parseGif(bytes: Uint8Array, name: string): GifFrame {
  const broken = (what: string) => new ProcessorError('NOT_AN_IMAGE', `${name}: a broken GIF (${what}); Pillow cannot open it either.`);
  const r = new Reader(bytes);
  const header = r.read(13);
  if (header.length < 13 || !isGif(header)) throw broken('the header is cut short');
  let width = header[6]! | (header[7]! << 8);
  let height = header[8]! | (header[9]! << 8);
  const flags = header[10]!;
  let globalPalette: Uint8Array | undefined;
  if (flags & 128) {
    const p = r.read(3 << ((flags & 7) + 1));
    if (p.length < 3 << ((flags & 7) + 1)) throw broken('the global colour table is cut short');
    if (paletteNeeded(p)) globalPalette = p;
  }
  let transparency: number | undefined;
  let s = r.read(1);
  if (s.length === 0 || s[0] === 0x3b) throw broken('it holds no image');
  for (;;) {
    if (s.length === 0) s = r.read(1);
    if (s.length === 0 || s[0] === 0x3b) break;
    if (s[0] === 0x21) {
      const label = r.read(1);
      let block = r.data();
      if (label.length === 0) throw broken('an extension is cut short');
      if (label[0] === 249 && block !== undefined) {
        // graphic control extension: flags, delay (2 bytes), transparent index
        if (block.length < 3 || (block[0]! & 1 && block.length < 4)) throw broken('a graphic control extension is cut short');
        if (block[0]! & 1) transparency = block[3];
      } else if (label[0] === 254) {
        while (block !== undefined && block.length > 0) block = r.data();
        s = new Uint8Array();
        continue;
      } else if (label[0] === 255 && block !== undefined) {
        if (String.fromCharCode(...block.subarray(0, 11)) === 'NETSCAPE2.0') r.data();
      }
      while (r.data() !== undefined);
    } else if (s[0] === 0x2c) {
      const d = r.read(9);
      if (d.length < 9) throw broken('the image descriptor is cut short');
      const left = d[0]! | (d[1]! << 8);
      const top = d[2]! | (d[3]! << 8);
      const frameWidth = d[4]! | (d[5]! << 8);
      const frameHeight = d[6]! | (d[7]! << 8);
      // Pillow grows the image to hold a first frame that reaches past the logical screen.
      width = Math.max(width, left + frameWidth);
      height = Math.max(height, top + frameHeight);
      let palette: Uint8Array | false | undefined;
      if (d[8]! & 128) {
        const p = r.read(3 << ((d[8]! & 7) + 1));
        if (p.length < 3 << ((d[8]! & 7) + 1)) throw broken('the local colour table is cut short');
        palette = paletteNeeded(p) ? p : false;
      }
      const code = r.read(1);
      if (code.length === 0) throw broken('the image data is missing');
      if (width === 0 || height === 0 || frameWidth === 0 || frameHeight === 0) throw broken('the image or frame is empty');
      return {
        width,
        height,
        left,
        top,
        frameWidth,
        frameHeight,
        interlaced: (d[8]! & 64) !== 0,
        palette: palette === undefined ? globalPalette : palette || undefined,
        transparency,
        codeSize: code[0]!,
        dataOffset: r.pos,
      };
    }
    s = new Uint8Array();
  }
  throw broken('it holds no image');
}

const TABLE = 4096;

/**
 * Decodes the frame parsed by parseGif and converts it to RGB as `convert("RGB")` does: mode P
 * gives each index's colour-table entry (black past the table's end), the transparent index
 * included; mode L gives the index as grey. The LZW decoder is Pillow's GifDecode.c: sub-blocks
 * are read across block terminators until every row is written (then the rest is ignored); a
 * frame whose data ends early (an end code or the end of the file before the last row) is refused
 * as Pillow refuses it ("image file is truncated"), as is an invalid code.
 */
export function decodeGifFrame(bytes: Uint8Array, f: GifFrame, name: string): RgbImage {
  const broken = (what: string) => new ProcessorError('NOT_AN_IMAGE', `${name}: a broken GIF (${what}); Pillow cannot open it either.`);
  if (f.codeSize > 12) throw broken(`LZW code size ${f.codeSize} is over 12`);
  // GifImagePlugin.load_prepare: frame 0 starts filled with the transparent index (else 0).
  const indices = new Uint8Array(f.width * f.height).fill(f.transparency ?? 0);

  const clear = 1 << f.codeSize;
  const end = clear + 1;
  const link = new Uint16Array(TABLE);
  const data = new Uint8Array(TABLE);
  const stack = new Uint8Array(TABLE);
  let next = 0;
  let codeSize = 0;
  let codeMask = 0;
  let state = 1; // 1: reset the table, 2: first code after a clear, 3: decoding
  let lastCode = 0;
  let lastData = 0;
  let bitBuffer = 0;
  let bitCount = 0;
  let blockSize = 0;
  let pos = f.dataOffset;

  // Rows in interlaced order: pass 1 every 8th row from 0, pass 2 from 4, pass 3 every 4th from 2, pass 4 every 2nd from 1.
  let x = 0;
  let y = 0;
  let step = f.interlaced ? 8 : 1;
  let pass = f.interlaced ? 1 : 0;
  let done = false;
  const put = (v: number) => {
    indices[(f.top + y) * f.width + f.left + x] = v;
    if (++x < f.frameWidth) return;
    x = 0;
    y += step;
    while (y >= f.frameHeight) {
      if (pass === 1) [y, pass] = [4, 2];
      else if (pass === 2) [step, y, pass] = [4, 2, 3];
      else if (pass === 3) [step, y, pass] = [2, 1, 0];
      else {
        done = true;
        return;
      }
    }
  };

  while (!done) {
    if (state === 1) {
      next = clear + 2;
      codeSize = f.codeSize + 1;
      codeMask = (1 << codeSize) - 1;
      state = 2;
    }
    while (bitCount < codeSize) {
      if (blockSize > 0) {
        bitBuffer |= bytes[pos++]! << bitCount;
        bitCount += 8;
        blockSize--;
      } else {
        // A sub-block is only read whole: the file ending first is Pillow's "image file is truncated".
        if (pos >= bytes.length || pos + bytes[pos]! >= bytes.length) throw broken('the image data ends before the last row');
        blockSize = bytes[pos++]!;
      }
    }
    let c = bitBuffer & codeMask;
    bitBuffer >>>= codeSize;
    bitCount -= codeSize;
    if (c === clear) {
      if (state !== 2) state = 1;
      continue;
    }
    // Pillow reads on past an end code (as if it were not there) while rows are missing, and
    // what follows a frame's data is too short to fill them: the file ends, "truncated".
    if (c === end) throw broken('the image data ends before the last row');
    if (state === 2) {
      if (c > clear) throw broken('an LZW code before the table has entries');
      lastData = c & 0xff;
      lastCode = c;
      state = 3;
      put(lastData);
      continue;
    }
    const thisCode = c;
    if (c > next) throw broken('an LZW code past the table');
    let sp = TABLE;
    if (c === next) {
      stack[--sp] = lastData;
      c = lastCode;
    }
    while (c >= clear) {
      if (sp <= 0 || c >= TABLE) throw broken('an LZW string past the table');
      stack[--sp] = data[c]!;
      c = link[c]!;
    }
    lastData = c & 0xff;
    if (next < TABLE) {
      data[next] = lastData;
      link[next] = lastCode;
      if (next === codeMask && codeSize < 12) {
        codeSize++;
        codeMask = (1 << codeSize) - 1;
      }
      next++;
    }
    lastCode = thisCode;
    put(lastData);
    for (let k = sp; k < TABLE && !done; k++) put(stack[k]!);
  }

  const out = new Uint8Array(f.width * f.height * 3);
  const p = f.palette;
  const entries = p === undefined ? 0 : Math.floor(p.length / 3);
  for (let i = 0; i < indices.length; i++) {
    const v = indices[i]!;
    if (p === undefined) {
      out[i * 3] = out[i * 3 + 1] = out[i * 3 + 2] = v;
    } else if (v < entries) {
      out[i * 3] = p[v * 3]!;
      out[i * 3 + 1] = p[v * 3 + 1]!;
      out[i * 3 + 2] = p[v * 3 + 2]!;
    }
  }
  return { width: f.width, height: f.height, data: out };
}
