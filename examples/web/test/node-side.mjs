// Node's results of the checks the page runs: the same check code (src/checks, compiled to dist-node/), the
// packages' Node entries (onnxruntime-node, the file system).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createSession } from '@vlmkit/runtime';
import { graphCases, MROPE_FIXTURES, mropePositions, sha256 } from '../dist-node/checks/index.js';

export async function nodeMrope(fixtures) {
  const out = [];
  for (const file of MROPE_FIXTURES) {
    out.push(...mropePositions(file, JSON.parse(await readFile(join(fixtures, 'mrope', file), 'utf8'))));
  }
  return out;
}

/** Every graph case run on onnxruntime-node's CPU EP through @vlmkit/runtime: { name, sha256, outputs }. */
export async function nodeGraphs() {
  const results = [];
  for (const c of await graphCases()) {
    const session = await createSession(c.model.bytes, { device: 'cpu', externalData: c.model.externalData, name: c.name });
    try {
      const feeds = Object.fromEntries(Object.entries(c.feeds).map(([k, f]) => [k, { dtype: 'float32', dims: f.dims, data: f.data }]));
      const out = await session.run(feeds);
      results.push({ name: c.name, sha256: await sha256(c.model.bytes), outputs: out });
    } finally {
      await session.release();
    }
  }
  return results;
}
