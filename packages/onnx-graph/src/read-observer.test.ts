// observeFileReads: the file-backed tensor reads made within a context (tensorBytes, a save's copies and
// folds, lazy tensors that read a file ref) reach its listener, with the file's byte range; none outside it.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Graph } from './graph.js';
import * as nn from './nn.js';
import { type FileRead, observeFileReads } from './read-observer.js';
import { saveModel } from './save-model.node.js';
import { tensorBytes } from './tensor-bytes.js';
import { lazyTensor, tensorFromFile } from './tensor-ref.js';
import { Weights } from './weights.js';

describe('observeFileReads', () => {
  it("reports a save's reads of file tensors (copied, folded, inside a lazy tensor), and none outside it", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-reads-'));
    const file = join(dir, 'weights.bin');
    // Three float32 tensors after 8 junk bytes: w [4, 4] at 8, bias [4] at 72, extra [4] at 88.
    await writeFile(file, new Uint8Array(Float32Array.from({ length: 26 }, (_, i) => i).buffer));
    const w = tensorFromFile('float32', [4, 4], file, 8, 64);
    const bias = tensorFromFile('float32', [4], file, 72, 16);
    const extra = tensorFromFile('float32', [4], file, 88, 16);
    const g = new Graph();
    const x = g.input('x', 'float32', [1, 4]);
    // nn.linear transposes the weight (folded: read once); the bias is copied (no reference given); a lazy
    // tensor reads `extra`.
    const y = nn.linear(g, x, Weights.from({ 'fc.weight': w, 'fc.bias': bias }), 'fc', { out: 4 });
    const scale = g.initializer(
      'scale',
      lazyTensor('float32', [4], async () => new Float32Array((await tensorBytes(extra)).slice().buffer)),
    );
    g.output(g.add(y, scale), 'y');
    const reads: FileRead[] = [];
    await tensorBytes(w);
    await observeFileReads(
      (r) => reads.push(r),
      () => saveModel(g, join(dir, 'out', 'm.onnx'), { externalThreshold: 1, fold: true }),
    );
    await tensorBytes(w);
    const sorted = reads.map((r) => [r.path, r.byteOffset, r.byteLength]).sort((a, b) => (a[1] as number) - (b[1] as number));
    expect(sorted).toEqual([
      [file, 8, 64],
      [file, 72, 16],
      [file, 88, 16],
    ]);
  });
});
