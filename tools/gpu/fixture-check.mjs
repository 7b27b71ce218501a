// The fixture cases of both tiny models on DEVICE (cuda) and on CPU, in one process: max relative logits
// difference DEVICE vs CPU per case (goal < 1e-4 in float32), each against HF's expected logits, greedy ids,
// and where ORT placed the nodes of every built graph (tools/gpu/README.md). Each case runs once per op set on DEVICE
// (`--ops`, default both: the standard ONNX ops and onnxruntime's com.microsoft fused kernels), against the CPU with
// the standard ops; the placement section lists, per graph, every node not on DEVICE's provider by op type and name.
// usage: node tools/gpu/fixture-check.mjs [--device cuda|cpu] [--ops onnx,contrib] [--fixtures DIR] [--out FILE.json] [--no-placement]
// `--device cpu` is the dry run: the same path with CPU on both sides (differences 0). Needs `pnpm build`.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPretrained, readNamedTensors } from '../../packages/models/dist/index.js';
import { EXECUTION_PROVIDERS, formatOffProvider, formatPlacement, nodePlacement } from '../../packages/runtime/dist/index.js';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const args = { device: 'cuda', ops: ['onnx', 'contrib'], fixtures: join(root, 'test-fixtures'), out: undefined, placement: true };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a === '--no-placement') {
    args.placement = false;
    continue;
  }
  const v = process.argv[++i];
  if (a === '--device') args.device = v;
  else if (a === '--ops') args.ops = v.split(',');
  else if (a === '--fixtures') args.fixtures = resolve(v);
  else if (a === '--out') args.out = resolve(v);
  else throw new Error(`unknown argument ${a} (usage: fixture-check.mjs [--device cuda|cpu] [--fixtures DIR] [--out FILE.json])`);
}
const TOLERANCE = 1e-4;
const MODELS = ['ernie-tiny', 'granite-tiny'];
const NEW_TOKENS = 8;

/** max |a - b| / max |b| over the logits rows the attention mask keeps (padding excluded, as the model tests do). */
function relError(a, b, mask, vocab) {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    if (mask && mask[Math.floor(i / vocab)] === 0n) continue;
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return diff / scale;
}

const loaded = new Map();
const scratch = [];
/** One model per (checkpoint, adapter, device, ops), each building into its own cache dir so its graphs can be listed. */
async function model(checkpoint, adapter, device, ops) {
  const key = `${checkpoint}|${adapter ?? ''}|${device}|${ops}`;
  if (!loaded.has(key)) {
    const cacheDir = mkdtempSync(join(tmpdir(), 'vlmkit-gpu-check-'));
    scratch.push(cacheDir);
    const m = await loadPretrained(join(args.fixtures, checkpoint), {
      device,
      cacheDir,
      reference: 'hf',
      ops,
      ...(adapter ? { adapter: join(args.fixtures, adapter) } : {}),
    });
    if (m.device !== device) throw new Error(`${key}: got device ${m.device} (${m.deviceReason})`);
    loaded.set(key, { m, cacheDir, graphs: readdirSync(cacheDir).filter((f) => f.endsWith('.onnx')) });
  }
  return loaded.get(key);
}

const rows = [];
const reasons = new Set();
for (const name of MODELS) {
  const casesDir = join(args.fixtures, name, 'cases');
  for (const c of readdirSync(casesDir).sort()) {
    const json = JSON.parse(readFileSync(join(casesDir, c, 'case.json'), 'utf8'));
    const inputs = await readNamedTensors(join(casesDir, c, 'inputs.safetensors'));
    const expected = await readNamedTensors(join(casesDir, c, 'expected.safetensors'));
    const cpu = await model(json.checkpoint, json.adapter, 'cpu', 'onnx');
    for (const ops of args.ops) {
      const dev = await model(json.checkpoint, json.adapter, args.device, ops);
      reasons.add(`${json.checkpoint}${json.adapter ? ` + ${json.adapter}` : ''}: ${dev.m.device} (${dev.m.deviceReason})`);
      await dev.m.forwardNamed(inputs); // first run: kernel selection, allocations
      let t0 = performance.now();
      const d = (await dev.m.forwardNamed(inputs)).logits;
      const devMs = performance.now() - t0;
      t0 = performance.now();
      const p = (await cpu.m.forwardNamed(inputs)).logits;
      const cpuMs = performance.now() - t0;
      const vocab = d.dims.at(-1);
      const mask = inputs.attention_mask?.data;
      const ref = expected.logits.data;
      const gd = await dev.m.generate(inputs, { maxNewTokens: NEW_TOKENS });
      const gc = await cpu.m.generate(inputs, { maxNewTokens: NEW_TOKENS });
      const hfIds = expected.generated_ids ? Array.from(expected.generated_ids.data, Number) : undefined;
      rows.push({
        model: name,
        case: c,
        ops,
        devVsCpu: relError(d.data, p.data, mask, vocab),
        devVsHf: relError(d.data, ref, mask, vocab),
        cpuVsHf: relError(p.data, ref, mask, vocab),
        idsEqual: JSON.stringify(gd.tokens) === JSON.stringify(gc.tokens),
        idsHf: hfIds === undefined ? 'n/a' : JSON.stringify(gd.tokens.flat()) === JSON.stringify(hfIds) ? 'equal' : 'differ',
        devMs,
        cpuMs,
        decodeMs: gd.timings.stepMs.reduce((a, b) => a + b, 0) / Math.max(1, gd.timings.stepMs.length),
      });
      const r = rows.at(-1);
      console.error(`${name}/${c} (ops ${ops}): ${args.device} vs cpu ${r.devVsCpu.toExponential(2)}`);
    }
  }
}

const fmt = (x) => x.toExponential(2);
const D = args.device;
const lines = [
  `| model | case | ops | logits ${D} vs cpu | ${D} vs HF | cpu vs HF | greedy ids ${D} = cpu | ${D} ids vs HF | forward ms ${D} / cpu | decode ms/token ${D} |`,
  '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ...rows.map(
    (r) =>
      `| ${r.model} | ${r.case} | ${r.ops} | ${fmt(r.devVsCpu)}${r.devVsCpu < TOLERANCE ? '' : ' FAIL'} | ${fmt(r.devVsHf)} | ${fmt(r.cpuVsHf)} | ` +
      `${r.idsEqual ? 'yes' : 'NO'} | ${r.idsHf} | ${r.devMs.toFixed(1)} / ${r.cpuMs.toFixed(1)} | ${r.decodeMs.toFixed(2)} |`,
  ),
];

// Node placement of every distinct graph the DEVICE models built (the base and LoRA Granite decoders differ only in weights).
const placements = [];
const seen = new Set();
for (const [key, { cacheDir, graphs }] of loaded) {
  if (!args.placement || key.split('|')[2] !== D) continue;
  const ops = key.split('|')[3];
  for (const g of graphs) {
    const kind = `${g.replace(/-[0-9a-f]+\.onnx$/, '')} (ops ${ops})`;
    if (seen.has(kind)) continue;
    seen.add(kind);
    const p = await nodePlacement(join(cacheDir, g), { device: D });
    placements.push({ graph: kind, file: g, placement: p, lines: formatPlacement(p), off: formatOffProvider(p, EXECUTION_PROVIDERS[D]) });
  }
}
if (args.placement) {
  lines.push('', `| graph | nodes per provider (ORT placement on ${D}) |`, '| --- | --- |');
  for (const p of placements) lines.push(`| ${p.graph} | ${p.lines.join('; ')} |`);
  // Every node not on DEVICE's provider, by op type and name (what falls back), and ORT's host/device copies.
  for (const p of placements) {
    if (p.off.length === 0) continue;
    lines.push('', `${p.graph}: ${p.off.length} node(s) not on ${EXECUTION_PROVIDERS[D]}`, ...p.off.map((l) => `  ${l}`));
  }
}

console.log(`device reasons:\n${[...reasons].map((r) => `  ${r}`).join('\n')}\n`);
console.log(lines.join('\n'));
if (args.out) writeFileSync(args.out, `${JSON.stringify({ device: D, rows, placements, reasons: [...reasons] }, null, 1)}\n`);

for (const { m } of loaded.values()) await m.release();
for (const d of scratch) rmSync(d, { recursive: true, force: true });
const failed = rows.filter((r) => !(r.devVsCpu < TOLERANCE) || !r.idsEqual);
if (failed.length > 0) {
  console.log(
    `\n${failed.length} case(s) outside ${TOLERANCE} or with different ids: ${failed.map((r) => `${r.model}/${r.case} (${r.ops})`).join(', ')}`,
  );
  process.exitCode = 1;
}
