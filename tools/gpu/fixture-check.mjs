// The fixture cases of both tiny models on DEVICE (cuda) and on CPU, in one process: max relative logits
// difference DEVICE vs CPU per case (goal < 1e-4 in float32), each against HF's expected logits, greedy ids,
// and where ORT placed the nodes of every built graph (tools/gpu/README.md). Each case runs once per op set on DEVICE
// (`--ops`, default both: the standard ONNX ops and onnxruntime's com.microsoft fused kernels), against the CPU with
// the standard ops; the placement section lists, per graph, every node not on DEVICE's provider by op type and name.
// Each op set runs once per compute dtype (`--dtype`, default float32,float16,bfloat16): 16-bit rows report the
// logits against the CPU float32 run and HF (not judged against 1e-4) and their greedy ids against CPU float32's.
// Every row also has the loop check: greedy ids on DEVICE with the in-graph loop (profile field loop 'graph', chunks
// of `--loop-chunk`, default 3) against the host loop in the same op set and dtype (must be equal). A model that
// fails to load or run (e.g. bfloat16 on the CPU EP: NO_KERNEL) is a row with its error, not a crash.
// usage: node tools/gpu/fixture-check.mjs [--device cuda|cpu] [--ops onnx,contrib] [--dtype float32,float16,bfloat16]
//          [--loop-chunk N] [--fixtures DIR] [--out FILE.json] [--no-placement]
// `--device cpu` is the dry run: the same path with CPU on both sides (float32 differences 0). Needs `pnpm build`.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPretrained, OPS_FIELDS, readNamedTensors } from '../../packages/models/dist/index.js';
import { EXECUTION_PROVIDERS, formatOffProvider, formatPlacement, nodePlacement } from '../../packages/runtime/dist/index.js';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const DTYPES = ['float32', 'float16', 'bfloat16'];
const args = {
  device: 'cuda',
  ops: ['onnx', 'contrib'],
  dtypes: DTYPES,
  loopChunk: 3,
  fixtures: join(root, 'test-fixtures'),
  out: undefined,
  placement: true,
};
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a === '--no-placement') {
    args.placement = false;
    continue;
  }
  const v = process.argv[++i];
  if (a === '--device') args.device = v;
  else if (a === '--ops') args.ops = v.split(',');
  else if (a === '--dtype') {
    args.dtypes = v.split(',');
    const bad = args.dtypes.filter((d) => !DTYPES.includes(d));
    if (bad.length > 0) throw new Error(`--dtype: unknown ${bad.join(', ')} (one or more of ${DTYPES.join(',')})`);
  } else if (a === '--loop-chunk') args.loopChunk = Number(v);
  else if (a === '--fixtures') args.fixtures = resolve(v);
  else if (a === '--out') args.out = resolve(v);
  else {
    throw new Error(
      `unknown argument ${a} (usage: fixture-check.mjs [--device cuda|cpu] [--ops onnx,contrib] [--dtype float32,float16,bfloat16] [--loop-chunk N] [--fixtures DIR] [--out FILE.json] [--no-placement])`,
    );
  }
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

/** An error as one line: its typed code (models / runtime errors) and message. */
const describe = (e) => `${e?.code ?? e?.name ?? 'Error'}: ${String(e?.message ?? e).split('\n')[0]}`;
/** bfloat16 on ORT's CPU EP: no compute kernels (models README, 'Compute dtype'), so NO_KERNEL is the expected answer. */
const expectedError = (dtype, device, error) => device === 'cpu' && dtype === 'bfloat16' && error.startsWith('NO_KERNEL');

const loaded = new Map();
const scratch = [];
/**
 * One model per (checkpoint, adapter, device, ops, dtype, loop), each building into its own cache dir so its graphs
 * can be listed; throws (once, remembered) when it does not load.
 */
async function model(checkpoint, adapter, device, ops, dtype = 'float32', loop = 'host') {
  const key = `${checkpoint}|${adapter ?? ''}|${device}|${ops}|${dtype}|${loop}`;
  if (!loaded.has(key)) {
    const cacheDir = mkdtempSync(join(tmpdir(), 'vlmkit-gpu-check-'));
    scratch.push(cacheDir);
    try {
      const m = await loadPretrained(join(args.fixtures, checkpoint), {
        device,
        cacheDir,
        reference: 'hf',
        dtype,
        profile: { ...OPS_FIELDS[ops], loop },
        ...(adapter ? { adapter: join(args.fixtures, adapter) } : {}),
      });
      if (m.device !== device) throw new Error(`${key}: got device ${m.device} (${m.deviceReason})`);
      loaded.set(key, { m, cacheDir, graphs: readdirSync(cacheDir).filter((f) => f.endsWith('.onnx')) });
    } catch (e) {
      loaded.set(key, { error: describe(e) });
    }
  }
  const entry = loaded.get(key);
  if (entry.error !== undefined) throw Object.assign(new Error(entry.error), { line: entry.error });
  return entry;
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
    const vocab = expected.logits.dims.at(-1);
    const mask = inputs.attention_mask?.data;
    const ref = expected.logits.data;
    const hfIds = expected.generated_ids ? Array.from(expected.generated_ids.data, Number) : undefined;
    for (const ops of args.ops) {
      for (const dtype of args.dtypes) {
        const row = { model: name, case: c, ops, dtype };
        rows.push(row);
        let gd;
        try {
          const dev = await model(json.checkpoint, json.adapter, args.device, ops, dtype);
          reasons.add(`${json.checkpoint}${json.adapter ? ` + ${json.adapter}` : ''}: ${dev.m.device} (${dev.m.deviceReason})`);
          await dev.m.forwardNamed(inputs); // first run: kernel selection, allocations
          let t0 = performance.now();
          const d = (await dev.m.forwardNamed(inputs)).logits;
          const devMs = performance.now() - t0;
          t0 = performance.now();
          const p = (await cpu.m.forwardNamed(inputs)).logits;
          const cpuMs = performance.now() - t0;
          gd = await dev.m.generate(inputs, { maxNewTokens: NEW_TOKENS });
          const gc = await cpu.m.generate(inputs, { maxNewTokens: NEW_TOKENS });
          Object.assign(row, {
            // For 16-bit rows: against the CPU float32 run (reported, not judged against TOLERANCE).
            devVsCpu: relError(d.data, p.data, mask, vocab),
            devVsHf: relError(d.data, ref, mask, vocab),
            cpuVsHf: relError(p.data, ref, mask, vocab),
            idsEqual: JSON.stringify(gd.tokens) === JSON.stringify(gc.tokens),
            idsHf: hfIds === undefined ? 'n/a' : JSON.stringify(gd.tokens.flat()) === JSON.stringify(hfIds) ? 'equal' : 'differ',
            devMs,
            cpuMs,
            decodeMs: gd.timings.stepMs.reduce((a, b) => a + b, 0) / Math.max(1, gd.timings.stepMs.length),
          });
        } catch (e) {
          row.error = e.line ?? describe(e);
        }
        // The loop check: the in-graph loop's greedy ids against the host loop's, same device, op set and dtype.
        row.loopChunk = args.loopChunk;
        if (gd !== undefined) {
          try {
            const lg = await model(json.checkpoint, json.adapter, args.device, ops, dtype, 'graph');
            const gg = await lg.m.generate(inputs, { maxNewTokens: NEW_TOKENS, loop: 'graph', loopChunk: args.loopChunk });
            row.loopIdsEqual = JSON.stringify(gg.tokens) === JSON.stringify(gd.tokens);
          } catch (e) {
            row.loopError = e.line ?? describe(e);
          }
        }
        const summary =
          row.error !== undefined
            ? row.error
            : `${args.device} vs cpu float32 ${row.devVsCpu.toExponential(2)}, loop graph ids ${row.loopError ?? (row.loopIdsEqual ? 'equal' : 'DIFFER')}`;
        console.error(`${name}/${c} (ops ${ops}, ${dtype}): ${summary}`);
      }
    }
  }
}

const fmt = (x) => x.toExponential(2);
const D = args.device;
const judged = (r) => r.dtype === 'float32';
const loopCell = (r) =>
  r.loopError !== undefined ? `error: ${r.loopError.slice(0, 100)}` : r.loopIdsEqual === undefined ? '-' : r.loopIdsEqual ? 'yes' : 'NO';
const lines = [
  `| model | case | ops | dtype | logits ${D} vs cpu float32 | ${D} vs HF | cpu vs HF | greedy ids ${D} = cpu float32 | ${D} ids vs HF | loop graph ids = host (${D}, chunk ${args.loopChunk}) | forward ms ${D} / cpu | decode ms/token ${D} |`,
  '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ...rows.map((r) =>
    r.error !== undefined
      ? `| ${r.model} | ${r.case} | ${r.ops} | ${r.dtype} | error: ${r.error.slice(0, 160)}${expectedError(r.dtype, D, r.error) ? ' (expected on cpu)' : ''} | - | - | - | - | - | - | - |`
      : `| ${r.model} | ${r.case} | ${r.ops} | ${r.dtype} | ${fmt(r.devVsCpu)}${!judged(r) || r.devVsCpu < TOLERANCE ? '' : ' FAIL'} | ${fmt(r.devVsHf)} | ${fmt(r.cpuVsHf)} | ` +
        `${r.idsEqual ? 'yes' : judged(r) ? 'NO' : 'no'} | ${r.idsHf} | ${loopCell(r)} | ${r.devMs.toFixed(1)} / ${r.cpuMs.toFixed(1)} | ${r.decodeMs.toFixed(2)} |`,
  ),
];
if (args.dtypes.some((d) => d !== 'float32')) {
  lines.push(
    '',
    `16-bit rows: logits against the CPU float32 run and HF (the bf16 case's HF logits are HF computing in bfloat16), not judged against ${TOLERANCE}; their greedy ids against CPU float32's are reported (yes/no), not judged (near-ties of the random tiny weights may flip).`,
  );
}

// Node placement of every distinct graph the DEVICE models built (the base and LoRA Granite decoders differ only in weights).
const placements = [];
const seen = new Set();
for (const [key, { cacheDir, graphs, error }] of loaded) {
  if (!args.placement || error !== undefined || key.split('|')[2] !== D) continue;
  const [ops, dtype] = key.split('|').slice(3, 5);
  for (const g of graphs) {
    const kind = `${g.replace(/-[0-9a-f]+\.onnx$/, '')} (ops ${ops}, ${dtype})`;
    if (seen.has(kind)) continue;
    seen.add(kind);
    try {
      const p = await nodePlacement(join(cacheDir, g), { device: D });
      placements.push({ graph: kind, file: g, placement: p, lines: formatPlacement(p), off: formatOffProvider(p, EXECUTION_PROVIDERS[D]) });
    } catch (e) {
      placements.push({ graph: kind, file: g, error: describe(e), lines: [`error: ${describe(e)}`], off: [] });
    }
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
if (args.out) {
  const json = { device: D, dtypes: args.dtypes, loopChunk: args.loopChunk, rows, placements, reasons: [...reasons] };
  writeFileSync(args.out, `${JSON.stringify(json, null, 1)}\n`);
}

for (const { m } of loaded.values()) await m?.release();
for (const d of scratch) rmSync(d, { recursive: true, force: true });
// Failures: float32 rows outside TOLERANCE or with ids other than CPU's; any row whose in-graph loop's ids differ
// from the host loop's, or that did not load or run (bfloat16's NO_KERNEL on the CPU EP excepted).
const failed = rows.filter(
  (r) =>
    (r.error !== undefined && !expectedError(r.dtype, D, r.error)) ||
    (r.error === undefined && judged(r) && (!(r.devVsCpu < TOLERANCE) || !r.idsEqual)) ||
    r.loopIdsEqual === false ||
    r.loopError !== undefined,
);
if (failed.length > 0) {
  console.log(
    `\n${failed.length} row(s) failed (float32 outside ${TOLERANCE} or ids other than cpu's; loop graph ids other than the host loop's; errors): ` +
      failed.map((r) => `${r.model}/${r.case} (${r.ops}, ${r.dtype})`).join(', '),
  );
  process.exitCode = 1;
}
