/** An 8-bit RGB image, pixels row-major and channels interleaved (`data.length === width * height * 3`). */
export interface RgbImage {
  /** What errors call the image (decodeImage sets the path, or `name` for bytes). */
  readonly name?: string;
  readonly width: number;
  readonly height: number;
  readonly data: Uint8Array;
}
