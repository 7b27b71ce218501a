import { ProcessorError } from '../errors.js';

/**
 * Checks Pillow makes while `load_image` opens a file that libvips does not make (it warns and
 * decodes on): a file that fails them is refused here as HF refuses it, instead of decoded.
 */

const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * PngImagePlugin `_open`: every chunk before the first IDAT (or IEND, fdAT) must have a 4-letter
 * word type, be whole, and carry the right CRC ("broken PNG file"); libpng only drops an ancillary
 * chunk with a bad CRC.
 */
export function checkPngChunks(bytes: Uint8Array, name: string): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const broken = (what: string) => new ProcessorError('NOT_AN_IMAGE', `${name}: a broken PNG (${what}); Pillow refuses it.`);
  let pos = 8;
  for (;;) {
    if (pos + 8 > bytes.length) throw broken('the file ends before the image data');
    const length = view.getUint32(pos);
    const type = String.fromCharCode(...bytes.subarray(pos + 4, pos + 8));
    if (!/^\w{4}$/.test(type)) throw broken(`a chunk type ${JSON.stringify(type)}`);
    if (type === 'IDAT' || type === 'IEND' || type === 'fdAT') return;
    const end = pos + 8 + length;
    if (end + 4 > bytes.length) throw broken(`the ${type} chunk is cut short`);
    if (crc32(bytes.subarray(pos + 4, end)) !== view.getUint32(end)) throw broken(`a bad checksum in the ${type} chunk`);
    pos = end + 4;
  }
}

/** TiffImagePlugin.PREFIXES, the TIFF headers Pillow's EXIF reader accepts. */
const TIFF_PREFIXES = ['MM\x00\x2a', 'II\x2a\x00', 'MM\x2a\x00', 'II\x00\x2a', 'MM\x00\x2b', 'II\x2b\x00'];

/**
 * `exif_transpose` reads the EXIF block (Image.getexif, Exif.load): after any "Exif\0\0" prefix,
 * an 8-byte TIFF header Pillow accepts, else it raises ("not a TIFF file"); a little-endian BigTIFF
 * header raises too (it needs 16 bytes). libvips ignores such a block and decodes the image.
 * For PNG and WebP, whose block sharp returns as stored. Not for JPEG: Pillow's JPEG reader reads
 * the block while opening and swallows this error (unless JFIF gives the DPI), and libvips
 * rewrites a JPEG's block, so its bytes are not the ones Pillow reads.
 */
export function checkExifHeader(exif: Uint8Array | undefined, name: string): void {
  if (exif === undefined) return;
  let data = exif;
  while (data.length >= 6 && String.fromCharCode(...data.subarray(0, 6)) === 'Exif\x00\x00') data = data.subarray(6);
  if (data.length === 0) return;
  const head = String.fromCharCode(...data.subarray(0, 8));
  if (head.length < 8 || !TIFF_PREFIXES.includes(head.slice(0, 4)) || head.charCodeAt(2) === 43) {
    throw new ProcessorError(
      'NOT_AN_IMAGE',
      `${name}: the EXIF block is broken (no valid TIFF header); Pillow refuses the image (exif_transpose). Remove the EXIF data or re-save the image.`,
    );
  }
}

/**
 * A WebP whose RIFF chunks are not all whole: Pillow's reader (libwebp's demuxer) refuses it ("could not
 * create decoder object"), as sharp does; a browser may decode what is there. For the browser decoder.
 */
export function checkWebpChunks(bytes: Uint8Array, name: string): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = 8 + view.getUint32(4, true);
  let pos = 12;
  while (pos + 8 <= Math.min(end, bytes.length)) pos += 8 + view.getUint32(pos + 4, true) + (view.getUint32(pos + 4, true) & 1);
  if (end > bytes.length || pos > end) {
    throw new ProcessorError('NOT_AN_IMAGE', `${name}: a broken WebP (a chunk or the file is cut short); Pillow refuses it.`);
  }
}
