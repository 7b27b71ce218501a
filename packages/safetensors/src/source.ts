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
   * The file's absolute path when the bytes are a file on this machine (Node's `fileSource`, `dirFiles`);
   * absent for a Blob or a URL. A tensor of a file with a path is referenced by path (`TensorInfo.file`),
   * one of a file without a path through its source (`TensorInfo.source`).
   */
  readonly path?: string;
  /**
   * Exactly `length` bytes at `offset`; refuses (SHORT_READ) when the source ends first or changed since it
   * was opened. The buffer is fresh and owned by the caller.
   */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Releases what the source holds open (a file handle); a Blob's or a URL's holds nothing and stays readable. */
  close(): Promise<void>;
}

/** The files of one model directory (the Hugging Face hub layout), by name relative to it. */
export interface ModelFiles {
  /** The directory as the user named it (a path, a URL, a picked folder's name): for messages. */
  readonly root: string;
  /** Opens a file by its relative name ('config.json', 'model-00001-of-00002.safetensors'); undefined when absent. */
  open(name: string): Promise<ByteSource | undefined>;
  /**
   * The names of the files at the top of the directory, sorted, where the source can list them (a directory,
   * a picked folder; a URL cannot): used only for messages (the weight files that were not read, what a
   * folder holds instead of model.safetensors).
   */
  list?(): Promise<readonly string[]>;
}
