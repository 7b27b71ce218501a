/**
 * Where a model's bytes come from, whatever the platform: a local file (Node), a `Blob`/`File` the user picked,
 * or an HTTP(S) URL read with range requests (browser and Node alike). Readers (safetensors files, checkpoints,
 * config and processor files) read through these two interfaces and never through a path, so the same code runs
 * in Node and in a page; only the sources differ.
 */

/** Random access to the bytes of one file. */
export interface ByteSource {
  /** Where the bytes come from, for messages: a path, a picked file's name, or a URL. */
  readonly name: string;
  /** Size in bytes, known when the source was opened. */
  readonly size: number;
  /**
   * What identifies this version of the file (Node: device, inode, size and mtime; a Blob: size and
   * lastModified; a URL: ETag or Last-Modified and size): cache keys are built from it, never from the bytes.
   */
  readonly stamp: string;
  /**
   * Exactly `length` bytes at `offset`; refuses (SHORT_READ) when the source ends first or changed since it
   * was opened. The buffer is fresh and owned by the caller.
   */
  read(offset: number, length: number): Promise<Uint8Array>;
  close(): Promise<void>;
}

/** The files of one model directory (the Hugging Face hub layout), by name relative to it. */
export interface ModelFiles {
  /** The directory as the user named it (a path, a URL, a picked folder's name): for messages. */
  readonly root: string;
  /** Opens a file by its relative name ('config.json', 'model-00001-of-00002.safetensors'); undefined when absent. */
  open(name: string): Promise<ByteSource | undefined>;
}
