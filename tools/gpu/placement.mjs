// Where ORT places every node of every graph both tiny models build, per op set (`ops`: onnx, contrib): for each
// graph, the count per provider and every node NOT on the requested device's provider, by op type and name (and
// the host/device copies ORT inserted). On CUDA this is the list of what would fall back to CPU.
// usage: node tools/gpu/placement.mjs [--device cuda|cpu] [--ops onnx,contrib] [--fixtures DIR] [--out FILE.json]
// Exit 1 when a graph has a node off the requested provider that is not shape arithmetic (SHAPE_OPS below) or when
// ORT inserted a copy. `--device cpu` is the dry run (everything on CPU, nothing listed). Needs `pnpm build`.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPretrained, OPS_FIELDS } from '../../packages/models/dist/index.js';
import { EXECUTION_PROVIDERS, formatPlacement, nodePlacement, offProvider } from '../../packages/runtime/dist/index.js';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const args = { device: 'cuda', ops: ['onnx', 'contrib'], fixtures: join(root, 'test-fixtures'), out: undefined };
for (let i = 2; i < process.argv.length; i++) {
  const [a, v] = [process.argv[i], process.argv[++i]];
  if (a === '--device') args.device = v;
  else if (a === '--ops') args.ops = v.split(',');
  else if (a === '--fixtures') args.fixtures = resolve(v);
  else if (a === '--out') args.out = resolve(v);
  else
    throw new Error(`unknown argument ${a} (usage: placement.mjs [--device cuda|cpu] [--ops onnx,contrib] [--fixtures DIR] [--out FILE])`);
}
const provider = EXECUTION_PROVIDERS[args.device];
if (provider === undefined) throw new Error(`--device must be cuda or cpu, got ${args.device}`);
// ORT keeps shape arithmetic on the host on purpose (small int64 tensors read by the host); anything else off the
// device is a fallback in the hot path.
const SHAPE_OPS = new Set([
  'Shape',
  'Gather',
  'Unsqueeze',
  'Squeeze',
  'Concat',
  'Slice',
  'Range',
  'Reshape',
  'Cast',
  'Sub',
  'Add',
  'Mul',
  'Div',
  'Equal',
  'Expand',
  'ConstantOfShape',
  'Max',
  'Min',
  'ReduceProd',
  'Where',
  'NonZero',
]);

const report = [];
let bad = 0;
for (const model of ['ernie-tiny', 'granite-tiny']) {
  for (const ops of args.ops) {
    const cacheDir = mkdtempSync(join(tmpdir(), 'vlmkit-placement-'));
    try {
      const m = await loadPretrained(join(args.fixtures, model), { device: args.device, cacheDir, profile: OPS_FIELDS[ops] });
      if (m.device !== args.device) throw new Error(`${model}: got device ${m.device} (${m.deviceReason})`);
      await m.release();
      for (const file of readdirSync(cacheDir)
        .filter((f) => f.endsWith('.onnx'))
        .sort()) {
        const graph = file.replace(/^vlmkit-/, '').replace(/-[0-9a-f]+\.onnx$/, '');
        const p = await nodePlacement(join(cacheDir, file), { device: args.device });
        const { others, copies } = offProvider(p, provider);
        const off = others.flatMap((o) => o.nodes.map((n) => ({ provider: o.provider, ...n })));
        const wholeGraphOff = others.filter((o) => o.nodes.length === 0);
        const hot = off.filter((n) => !SHAPE_OPS.has(n.opType));
        if (hot.length > 0 || copies.length > 0 || wholeGraphOff.length > 0) bad++;
        console.log(`\n## ${model} ${graph} (ops ${ops}): ${formatPlacement(p).join('; ')}`);
        for (const o of wholeGraphOff) console.log(`  ${o.provider}: all ${o.count} nodes`);
        for (const n of off) console.log(`  ${SHAPE_OPS.has(n.opType) ? '   ' : '!! '}${n.provider} ${n.opType} (${n.name})`);
        for (const n of copies) console.log(`  !! copy ${n.opType} (${n.name})`);
        report.push({
          model,
          graph,
          ops,
          providers: p.providers.map(({ provider: q, count }) => ({ provider: q, count })),
          off,
          copies,
          hot,
        });
      }
    } finally {
      rmSync(cacheDir, { recursive: true, force: true });
    }
  }
}
console.log(`\n${bad === 0 ? 'every graph' : `${bad} graph(s) NOT`} wholly on ${provider} apart from shape arithmetic (!! marks the rest)`);
if (args.out) writeFileSync(args.out, `${JSON.stringify({ device: args.device, provider, report }, null, 1)}\n`);
if (bad > 0) process.exitCode = 1;
