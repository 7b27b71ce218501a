import { valueInfo } from '../value-info.js';
import { PassBuilder } from './attention-pattern.js';
import { routedRegions } from './moe-experts.js';
import { feedersOf, type GraphPass, NodeIndex, type PassBody, replaceNodes } from './rewrite.js';

/** Routed experts per If (`expertGroupsPass`). */
export const EXPERTS_PER_IF = 8;
/** The fewest groups a region is split into: with fewer, most groups run at every step anyway. */
const MIN_GROUPS = 4;

/**
 * A layer's per-expert dispatch in Ifs of `EXPERTS_PER_IF` experts: a group none of whose experts got a token
 * skips its nodes. The grouped form runs every expert's Gather, Linears and SiLU at every step, on zero rows for
 * the experts no token chose: with 128 experts and top-8, a decode step launches ~120 experts' kernels for
 * nothing (docs/benchmarks.md, "Expert groups"). Each group's If is taken when its
 * experts' row counts sum above zero; its then-branch is the experts' own nodes, moved unchanged, and the
 * Concat of their outputs; the else-branch an empty [0, D]. The outer Concat reads the groups in expert order,
 * so the result is the same tensor, bit for bit. Regions of fewer than `MIN_GROUPS` groups, and regions a MoE
 * pass already replaced, are left as they are; run it after those passes.
 */
export const expertGroupsPass: GraphPass = {
  name: 'expert-groups',
  key: `size=${EXPERTS_PER_IF}`,
  run(body) {
    let n = 0;
    for (const region of routedRegions(body.graph).values()) {
      if (
        region.experts.length >= EXPERTS_PER_IF * MIN_GROUPS &&
        group(
          body,
          region.experts.map((e) => e.down),
          region.scope,
        )
      )
        n++;
    }
    return n;
  },
};

function group(body: PassBody, downs: readonly string[], scope: string): boolean {
  const index = new NodeIndex(body);
  const producers = downs.map((d) => index.producer(d));
  if (producers.some((p) => p === undefined)) return false; // another body's region, or grouped already
  const [cat, ...others] = new Set(downs.flatMap((d) => index.readersOf(d)));
  if (cat === undefined || others.length > 0 || cat.opType !== 'Concat' || (cat.domain ?? '') !== '') return false;
  const at = cat.input!.indexOf(downs[0]!);
  if (at < 0 || downs.some((d, e) => cat.input![at + e] !== d)) return false;
  const regions = producers.map((p) => feedersOf(index, p!, new Set()));
  // Each expert's rows come from one Split of the (token, pick) pairs by expert: its sizes are the counts.
  const split = regions[0]!
    .flatMap((n) => n.input ?? [])
    .map((name) => index.producer(name))
    .find((p) => p?.opType === 'Split');
  const counts = split?.input?.[1];
  if (split === undefined || !counts || (split.output ?? []).length !== downs.length + 1) return false;
  const b = new PassBuilder(body);
  const countsV = b.value(counts);
  const out0 = b.value(downs[0]!);
  const D = out0?.shape[1];
  if (countsV === undefined || out0 === undefined || typeof D !== 'number') return false;
  const ifOuts: string[] = [];
  for (let first = 0; first < downs.length; first += EXPERTS_PER_IF) {
    const last = Math.min(downs.length, first + EXPERTS_PER_IF);
    const name = `${scope}.experts_${first}_${last - 1}`;
    const inGroup = new Set(regions.slice(first, last).flat());
    const t = new PassBuilder(body);
    const joined = t.build(name, (g) =>
      g.concat(
        downs.slice(first, last).map((d) => t.value(d)!),
        0,
      ),
    );
    const then = {
      name: `${name}/then`,
      node: [...body.nodes.filter((n) => inGroup.has(n)), ...t.nodes()],
      input: [],
      output: [valueInfo(joined)],
    };
    const e = new PassBuilder(body);
    const empty = e.build(name, (g) => g.constantOfShape(g.constant('int64', [2], [0, D]), 0, out0.dtype));
    const otherwise = { name: `${name}/else`, node: e.nodes(), input: [], output: [valueInfo(empty)] };
    const [y] = b.build(name, (g) => {
      const chosen = g.reduceSum(g.slice(countsV, [first], [last], [0]), [0], false);
      const cond = g.greater(chosen, g.scalar(0, 'int64'));
      return g.emit('If', [cond], [{ dtype: out0.dtype, shape: [g.freshDim('rows'), D] }], {
        then_branch: { graph: then },
        else_branch: { graph: otherwise },
      });
    });
    ifOuts.push(y!.name);
  }
  const input = [...cat.input!.slice(0, at), ...ifOuts, ...cat.input!.slice(at + downs.length)];
  return replaceNodes(index, [...regions.flat(), cat], [...b.nodes(), { ...cat, input }]);
}
