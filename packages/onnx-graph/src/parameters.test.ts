import { describe, expect, it } from 'vitest';
import { Graph } from './graph.js';
import * as nn from './nn.js';
import { recordComponentParameters, recordParameters } from './parameters.js';
import { tensorFromArray } from './tensor-ref.js';
import { Weights } from './weights.js';

/** A two-layer MLP with a norm, one tied table read twice: the kind of builder a component has. */
function build(g: Graph, w: Weights): void {
  const x = g.input('x', 'float32', ['n', 8]);
  const h = g.gelu(nn.linear(g, x, w.sub('mlp'), 'fc1', { out: 16 }));
  const y = nn.layerNorm(g, nn.linear(g, h, w.sub('mlp'), 'fc2', { bias: false, out: 8 }), w, 'norm', 1e-5);
  const table = g.param(w, 'embed.weight', [5, 8]);
  g.output(g.matmul(y, g.transpose(table, [1, 0])), 'logits');
  g.output(g.gather(g.param(w, 'embed.weight', [5, 8]), g.input('ids', 'int64', ['n']), 0), 'rows');
}

describe('recordParameters', () => {
  it('lists what the builder reads, in order, with the shapes it expects, each name once', () => {
    const specs = recordParameters((w) => build(new Graph(), w));
    expect(specs).toEqual([
      { name: 'mlp.fc1.weight', shape: [16, 8] },
      { name: 'mlp.fc1.bias', shape: [16] },
      { name: 'mlp.fc2.weight', shape: [8, 16] },
      { name: 'norm.weight', shape: [8] },
      { name: 'norm.bias', shape: [8] },
      { name: 'embed.weight', shape: [5, 8] },
    ]);
  });

  it('the recorded list is what the same builder accepts, and a wrong shape is still caught', () => {
    const specs = recordParameters((w) => build(new Graph(), w));
    const real = (bad?: string) =>
      Weights.from(
        Object.fromEntries(
          specs.map((s) => {
            const shape = s.name === bad ? [...s.shape, 1] : s.shape;
            return [s.name, tensorFromArray('float32', shape, new Float32Array(shape.reduce((a, b) => a * b, 1)))];
          }),
        ),
      );
    expect(() => build(new Graph(), real())).not.toThrow();
    expect(() => build(new Graph(), real('norm.bias'))).toThrow(/parameter 'norm.bias' has shape \[8, 1\], expected \[8\]/);
  });

  it('placeholders carry no data: a recorded graph cannot be serialised by accident', async () => {
    let ref: ReturnType<Weights['get']> | undefined;
    recordParameters((w) => {
      new Graph().param(w, 'a', [2, 3]);
      ref = w.get('a');
    });
    expect(ref).toMatchObject({ kind: 'lazy', dtype: 'float32', shape: [2, 3] });
    await expect(ref!.kind === 'lazy' ? ref!.load() : Promise.resolve()).rejects.toThrow(/placeholder from recordParameters/);
  });

  it('the same name read with two shapes is an error', () => {
    expect(() =>
      recordParameters((w) => {
        const g = new Graph();
        g.param(w, 'a', [2, 3]);
        g.param(w, 'a', [3, 2]);
      }),
    ).toThrow(/parameter 'a' is read as \[2, 3\] and as \[3, 2\]/);
  });

  it('a parameter sized by a symbolic dimension is refused', () => {
    expect(() =>
      recordParameters((w) => {
        const g = new Graph();
        nn.rmsNorm(g, g.input('x', 'float32', ['n', 'd']), w, 'norm', 1e-6);
      }),
    ).toThrow(/norm: the last dimension of 'x' is d; a parameter needs a static size/);
  });

  it('recordComponentParameters keeps one list per component', () => {
    const specs = recordComponentParameters(['tower', 'head'], (w) => {
      const g = new Graph();
      const x = nn.linear(g, g.input('x', 'float32', [1, 4]), w.tower, 'proj', { out: 6 });
      nn.rmsNorm(g, x, w.head, 'norm', 1e-6);
    });
    expect(specs).toEqual({
      tower: [
        { name: 'proj.weight', shape: [6, 4] },
        { name: 'proj.bias', shape: [6] },
      ],
      head: [{ name: 'norm.weight', shape: [6] }],
    });
  });
});
