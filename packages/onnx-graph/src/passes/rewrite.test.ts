import { describe, expect, it } from 'vitest';
import { Graph } from '../graph.js';
import { passDiffs, randn } from '../test-utils/ort.js';
import { quantizeLinearPass } from './quantize-linear.js';
import {
  applyPasses,
  deferPasses,
  deferredPassKey,
  feedersOf,
  type GraphPass,
  makeNode,
  NodeIndex,
  replaceNodes,
  rewriteEach,
  runDeferredPasses,
} from './rewrite.js';

/** Neg(Neg(x)) -> Identity(x): the smallest pattern with an inner value, to test the machinery. */
const doubleNeg: GraphPass = {
  name: 'double-neg',
  run: (body) =>
    rewriteEach(body, (node, index) => {
      if (node.opType !== 'Neg') return false;
      const inner = index.producer(node.input![0]!);
      if (inner?.opType !== 'Neg' || !index.onlyReadBy(inner.output![0]!, node)) return false;
      const id = makeNode('Identity', [inner.input![0]!], [node.output![0]!], { name: body.graph.freshName(`${node.name}/fused`) });
      return replaceNodes(index, [inner, node], [id]);
    }),
};

function twoNegs(alsoReturnInner: boolean): Graph {
  const g = new Graph();
  const x = g.input('x', 'float32', [2, 3]);
  const a = g.neg(x);
  const y = g.relu(g.neg(a));
  g.output(y, 'y');
  if (alsoReturnInner) g.output(a, 'a');
  return g;
}

describe('rewrite passes', () => {
  it('deferPasses records the passes on the graph; runDeferredPasses runs them in order, as if applied at once', () => {
    const order: string[] = [];
    const counted = (name: string, pass: GraphPass): GraphPass => ({
      name,
      run: (b) => {
        order.push(name);
        return pass.run(b);
      },
    });
    const g = deferPasses(() => {
      const g = twoNegs(false);
      applyPasses(g, [counted('first', doubleNeg)]);
      applyPasses(g, [counted('second', doubleNeg)]);
      return g;
    });
    expect(order).toEqual([]);
    expect(g.snapshot().nodes.filter((n) => n.opType === 'Neg')).toHaveLength(2);
    expect(deferredPassKey(g)).toBe('["first","second"]');
    expect(runDeferredPasses(g)).toEqual({ first: 1, second: 0 });
    expect(order).toEqual(['first', 'second']);
    const direct = twoNegs(false);
    applyPasses(direct, [doubleNeg]);
    expect(JSON.stringify(g.snapshot().nodes)).toBe(JSON.stringify(direct.snapshot().nodes));
    // Nothing waits any more; outside deferPasses a pass runs at once.
    expect(runDeferredPasses(g)).toEqual({});
    expect(deferredPassKey(g)).toBe('[]');
    expect(applyPasses(twoNegs(false), [counted('third', doubleNeg)])).toEqual({ third: 1 });
  });

  it("a deferred pass's options are part of its key (quantize int4 and int8 differ)", () => {
    const keyOf = (bits: 'int4' | 'int8') =>
      deferredPassKey(
        deferPasses(() => {
          const g = twoNegs(false);
          applyPasses(g, [quantizeLinearPass(bits)]);
          return g;
        }),
      );
    expect(keyOf('int4')).toMatch(/quantize-linear/);
    expect(keyOf('int4')).not.toBe(keyOf('int8'));
  });

  it('replaces a pattern and keeps the outputs', async () => {
    const { rewrites, diffs } = await passDiffs(() => twoNegs(false), [doubleNeg], {
      x: { dtype: 'float32', dims: [2, 3], data: randn(6, 1) },
    });
    expect(rewrites).toEqual({ 'double-neg': 1 });
    expect(diffs.y).toBe(0);
  });

  it('leaves a pattern whose inner value is still needed', () => {
    const g = twoNegs(true);
    expect(applyPasses(g, [doubleNeg])).toEqual({ 'double-neg': 0 });
    expect(g.nodes.filter((n) => n.opType === 'Neg')).toHaveLength(2);
  });

  it('rewrites inside Loop and If bodies', async () => {
    const build = () => {
      const g = new Graph();
      const x = g.input('x', 'float32', [3]);
      const flag = g.input('flag', 'bool', []);
      const [y] = g.if(
        flag,
        (b) => [b.neg(b.neg(b.relu(x)))],
        (b) => [b.relu(x)],
      );
      g.output(y!, 'y');
      return g;
    };
    const { rewrites, diffs } = await passDiffs(build, [doubleNeg], {
      x: { dtype: 'float32', dims: [3], data: [-1, 0.5, 2] },
      flag: { dtype: 'bool', dims: [], data: [1] },
    });
    expect(rewrites).toEqual({ 'double-neg': 1 });
    expect(diffs.y).toBe(0);
  });

  it('places a replacement after the values it reads (a removed producer far earlier)', async () => {
    // Cast(w) early, then MatMul(h, cast) late: the fused node reads h, so it goes where MatMul was.
    const build = () => {
      const g = new Graph();
      const x = g.input('x', 'float32', [2, 2]);
      const w = g.cast(g.constant('float16', [2, 2], [1, 2, 3, 4]), 'float32');
      const h = g.relu(g.neg(x));
      g.output(g.matmul(h, w), 'y');
      return g;
    };
    const fuse: GraphPass = {
      name: 'cast-matmul',
      run: (body) =>
        rewriteEach(body, (node, index) => {
          // Once: the rewritten MatMul reads a fresh Cast too.
          if (node.opType !== 'MatMul' || node.name!.startsWith('m')) return false;
          const cast = index.producer(node.input![1]!)!;
          const w = body.graph.freshName('w32', { dtype: 'float32', shape: [2, 2] });
          const c = makeNode('Cast', [cast.input![0]!], [w], { name: body.graph.freshName('c'), attrs: { to: { int: 1 } } });
          const m = makeNode('MatMul', [node.input![0]!, w], node.output!, { name: body.graph.freshName('m') });
          return replaceNodes(index, [cast, node], [c, m]);
        }),
    };
    const { rewrites, diffs } = await passDiffs(build, [fuse], { x: { dtype: 'float32', dims: [2, 2], data: randn(4, 3) } });
    expect(rewrites).toEqual({ 'cast-matmul': 1 });
    expect(diffs.y).toBe(0);
  });

  it('refuses a replacement that would read a value computed from its own output', () => {
    const g = new Graph();
    const x = g.input('x', 'float32', [2]);
    const a = g.neg(x);
    const sum = g.add(a, g.relu(x));
    g.output(sum, 'y');
    const body = { nodes: g.nodes, outputs: new Set(['y']), graph: g };
    const neg = g.nodes[0]!;
    // Neg's output remade from the Add that reads it: no order runs that.
    const bad = makeNode('Identity', [sum.name], [neg.output![0]!], { name: g.freshName('bad') });
    expect(rewriteEach(body, (node, index) => node === neg && replaceNodes(index, [neg], [bad]))).toBe(0);
    expect(g.nodes[0]).toBe(neg);
  });

  it('replaceNodes keeps the index in step: after each rewrite it answers as one built afresh', () => {
    const g = new Graph();
    let v = g.input('x', 'float32', [2]);
    for (let i = 0; i < 4; i++) v = g.relu(g.neg(g.neg(v)));
    g.output(v, 'y');
    const body = { nodes: g.nodes, outputs: new Set(['y']), graph: g };
    const index = new NodeIndex(body);
    const answers = (ix: NodeIndex) => {
      const names = [...new Set(body.nodes.flatMap((n) => [...(n.input ?? []), ...(n.output ?? [])]))];
      return {
        producers: names.map((n) => ix.producer(n)),
        readers: names.map((n) => new Set(ix.readersOf(n))),
        positions: body.nodes.map((n) => ix.position(n)),
      };
    };
    let rewrites = 0;
    for (let again = true; again; ) {
      again = false;
      for (const node of body.nodes) {
        const inner = node.opType === 'Neg' ? index.producer(node.input![0]!) : undefined;
        if (inner?.opType !== 'Neg') continue;
        const id = makeNode('Identity', [inner.input![0]!], [node.output![0]!], { name: g.freshName('id') });
        expect(replaceNodes(index, [inner, node], [id])).toBe(true);
        expect(answers(index)).toEqual(answers(new NodeIndex(body)));
        rewrites++;
        again = true;
        break;
      }
    }
    expect(rewrites).toBe(4);
    expect(body.nodes.some((n) => n.opType === 'Neg')).toBe(false);
  });

  it('feedersOf: the nodes that only feed a node, stopping at values read elsewhere, returned or kept', () => {
    const g = new Graph();
    const x = g.input('x', 'float32', [2]);
    const shared = g.relu(x); // read by the root's cone and by the other output
    const kept = g.neg(x); // a value the replacement will read
    const only = g.exp(g.sigmoid(x)); // feeds the root alone, through two nodes
    const root = g.add(g.add(shared, kept), only);
    g.output(root, 'y');
    g.output(g.abs(shared), 'z');
    const body = { nodes: g.nodes, outputs: new Set(['y', 'z']), graph: g };
    const index = new NodeIndex(body);
    const cone = feedersOf(index, index.producer(root.name)!, new Set([kept.name]));
    expect(cone.map((n) => n.opType)).toEqual(['Sigmoid', 'Exp', 'Add', 'Add']);
    // Without `keep`, the Neg only feeds the root too.
    expect(feedersOf(index, index.producer(root.name)!, new Set()).map((n) => n.opType)).toEqual(['Neg', 'Sigmoid', 'Exp', 'Add', 'Add']);
  });
});
