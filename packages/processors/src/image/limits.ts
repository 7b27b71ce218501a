/**
 * PIL's decompression-bomb limit (`Image.MAX_IMAGE_PIXELS * 2`): above it
 * `Image.open` raises DecompressionBombError, so HF refuses these images too.
 */
export const DEFAULT_MAX_PIXELS = 2 * 89_478_485;

/** The largest image file read (256 MiB): a file past it is refused before it is read. */
export const DEFAULT_MAX_IMAGE_BYTES = 256 * 1024 * 1024;
