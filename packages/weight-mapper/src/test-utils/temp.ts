import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/** A fresh temp dir, removed after the test file's tests. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vlmkit-weight-mapper-'));
  afterAll(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** The bytes a TensorRef stands for (a file range read from disk or its source, a lazy one computed, a data one as is). */
export async function refBytes(ref: import('@vlmkit/onnx-graph').TensorRef): Promise<Uint8Array> {
  if (ref.kind === 'data') return new Uint8Array(ref.data.buffer, ref.data.byteOffset, ref.data.byteLength);
  if (ref.kind === 'lazy') {
    const d = await ref.load();
    return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  }
  if (ref.kind === 'source') return ref.source.read(ref.byteOffset, ref.byteLength);
  const { open } = await import('node:fs/promises');
  const fh = await open(ref.path, 'r');
  try {
    const out = new Uint8Array(ref.byteLength);
    await fh.read(out, 0, ref.byteLength, ref.byteOffset);
    return out;
  } finally {
    await fh.close();
  }
}
