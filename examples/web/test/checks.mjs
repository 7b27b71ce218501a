// The checks of `pnpm test:browser`: each asks the page for a result, computes the same in Node, compares.
import { fromWire } from '../dist-node/checks/index.js';
import { nodeGraphs, nodeMrope } from './node-side.mjs';
import { firstDifference, fmt, relMaxDiff } from './report.mjs';

/** Graph outputs: onnxruntime-web (WASM or WebGPU) against onnxruntime-node's CPU EP. */
const GRAPH_TOLERANCE = 1e-5;

export async function checks({ report, call, device, fixtures }) {
  if (device === 'wasm') {
    const [page, node] = [await call('mrope'), await nodeMrope(fixtures)];
    report.check('mrope: the same cases in the page and in Node', page.length === node.length && page.length > 0, `${page.length} cases`);
    for (const [i, p] of page.entries()) {
      const n = node[i];
      const at = firstDifference(p.positionIds, n.positionIds);
      const same = at === -1 && firstDifference(p.deltas, n.deltas) === -1;
      const hf = firstDifference(p.positionIds, p.hfPositionIds) === -1 && firstDifference(p.deltas, p.hfDeltas) === -1;
      report.check(
        `mrope ${p.name}: positions equal to Node's`,
        same,
        `${same ? 'equal' : `first difference at ${at}`}; ${hf ? '= HF' : '!= HF'}`,
      );
    }
  }

  const [page, node] = [await call('graphs', device), await nodeGraphs()];
  for (const n of node) {
    const p = page.find((r) => r.name === n.name);
    if (!p) {
      report.check(`graph ${n.name} (${device})`, false, 'missing from the page');
      continue;
    }
    const errs = Object.entries(n.outputs).map(([k, ref]) => {
      const got = p.outputs[k] && fromWire(p.outputs[k]);
      const dims = got && firstDifference(got.dims, ref.dims) === -1;
      return [k, dims ? relMaxDiff(got.data, ref.data) : Number.POSITIVE_INFINITY];
    });
    const worst = Math.max(...errs.map(([, e]) => e));
    const bytes = p.sha256 === n.sha256;
    report.check(
      `graph ${n.name} on onnxruntime-web ${device} vs onnxruntime-node cpu`,
      worst <= GRAPH_TOLERANCE && bytes,
      `max|diff|/max|ref| ${errs.map(([k, e]) => `${k} ${fmt(e)}`).join(', ')} (<= ${fmt(GRAPH_TOLERANCE)}); model bytes ${bytes ? 'identical' : 'differ'}`,
    );
  }
}
