// The checks of `pnpm test:browser`: each asks the page for a result, computes the same in Node, compares.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fromWire, MODEL_FIXTURES, PLACEMENT_END, PROCESSOR_FAMILIES } from '../dist-node/checks/index.js';
import { NodeModels, nodeDecodeImage, nodeGraphs, nodeMrope, nodeProcessorCase, wireTensors } from './node-side.mjs';
import { firstDifference, fmt, maxAbsDiff, relMaxDiff } from './report.mjs';

/** Pixel values of PNG (lossless) images: the browser's decoder and sharp must give the same RGB. */
const PIXEL_TOLERANCE = 1e-5;
/**
 * Pixel values of cases with JPEG images: decoders may round their IDCT and chroma upsampling differently (a
 * level or two of 255). Reported on their own lines; a larger difference (a wrong orientation, a wrong colour
 * conversion) still fails.
 */
const JPEG_TOLERANCE = 0.1;

/** Logits of the fixture models in the page against Node's: max |diff| / max |ref|, padding excluded (issue 21). */
const LOGITS_TOLERANCE = 1e-4;

/** Graph outputs: onnxruntime-web (WASM or WebGPU) against onnxruntime-node's CPU EP. */
const GRAPH_TOLERANCE = 1e-5;

/**
 * Op types that do a model's arithmetic: on WebGPU each must run on the adapter. ORT places what has no WebGPU
 * kernel on the CPU (WASM) silently, with a copy each way; shape arithmetic and small routing ops stay there
 * by ORT's own choice.
 */
const COMPUTE_OPS = new Set([
  'MatMul',
  'FusedMatMul',
  'Gemm',
  'MatMulNBits',
  'Conv',
  'Einsum',
  'Attention',
  'MultiHeadAttention',
  'GroupQueryAttention',
  'Softmax',
  'RotaryEmbedding',
  'LayerNormalization',
  'SkipLayerNormalization',
  'RMSNormalization',
  'SimplifiedLayerNormalization',
  'SkipSimplifiedLayerNormalization',
  'Gelu',
  'FastGelu',
  'QuickGelu',
  'BiasGelu',
  'MoE',
  'QMoE',
]);

/** Node's model results by case, computed once and compared with the page's on each device. */
const nodeResults = new Map();

export async function checks({ report, call, device, fixtures, pageLog }) {
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

  if (device === 'wasm') {
    const t = performance.now();
    await processorChecks(report, call, fixtures);
    await decodeChecks(report, call, fixtures);
    report.info(`processor cases and image decoding: ${((performance.now() - t) / 1000).toFixed(1)} s`);
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
      worst <= GRAPH_TOLERANCE && bytes && p.device === device,
      `max|diff|/max|ref| ${errs.map(([k, e]) => `${k} ${fmt(e)}`).join(', ')} (<= ${fmt(GRAPH_TOLERANCE)}); ` +
        `model bytes ${bytes ? 'identical' : 'differ'}; ran on ${p.device}`,
    );
  }

  if (device === 'webgpu') await placementChecks(report, call, fixtures, pageLog);
  const t = performance.now();
  await modelChecks(report, call, fixtures, device);
  report.info(`model cases on ${device}: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  if (device === 'wasm') await cacheCheck(report, call);
}

/** The page's graph cache in OPFS (G's check, src/checks/cache.ts): ERNIE-tiny loaded twice in one page. */
async function cacheCheck(report, call) {
  const label = 'graph cache (OPFS): a second load reads no tensor and gives the same logits';
  try {
    const c = await call('cache');
    const entries = Object.values(c.entries);
    report.check(
      label,
      c.first.tensorRequests > 0 &&
        c.second.tensorRequests === 0 &&
        c.second.bytes <= c.dataStart + 1 &&
        entries.length === 2 &&
        entries.every((f) => f.join() === 'data.bin,manifest.json,model.onnx') &&
        c.maxAbsDiff === 0,
      `first load ${c.first.requests} requests / ${c.first.bytes} B (${(c.first.loadMs / 1000).toFixed(1)} s), ` +
        `second ${c.second.requests} / ${c.second.bytes} B, ${c.second.tensorRequests} tensor reads (${(c.second.loadMs / 1000).toFixed(1)} s); ` +
        `${entries.length} entries; logits max|diff| ${c.maxAbsDiff}`,
    );
    // One byte of a stored entry changed in place: the hash finds it, that graph is built again from the
    // checkpoint (tensors read), and the logits are the first load's.
    const d = c.damaged;
    report.check(
      'graph cache (OPFS): an entry changed in place is rebuilt, never served',
      d.fetches.tensorRequests > 0 && d.maxAbsDiff === 0,
      `${d.entry}/${d.file} changed (lastModified kept: ${d.lastModifiedKept}); third load ${d.fetches.requests} requests, ` +
        `${d.fetches.tensorRequests} tensor reads; logits max|diff| ${d.maxAbsDiff}`,
    );
  } catch (err) {
    report.error(label, err);
  }
}

/**
 * Every case of the fixture models: the page builds the model from its safetensors over HTTP and runs forward
 * and greedy generation; Node loads the same checkpoint from its path. Logits within 1e-4 relative (padding
 * excluded), ids equal; HF's expected values reported beside.
 */
async function modelChecks(report, call, fixtures, device) {
  const node = new NodeModels();
  try {
    for (const model of MODEL_FIXTURES) {
      const dir = join(fixtures, model, 'cases');
      for (const name of (await readdir(dir)).sort()) {
        const label = `model ${model}/${name} on ${device}`;
        try {
          const key = `${model}/${name}`;
          if (!nodeResults.has(key)) nodeResults.set(key, node.case(fixtures, model, name));
          // The page and Node work at once: each leaves cores idle part of the time.
          const [page, { inputs, result: ref }] = await Promise.all([call('modelCase', model, name, device), nodeResults.get(key)]);
          const hf = await wireTensors(join(dir, name, 'expected.safetensors'));
          report.check(label, ...compareCase(page, ref, hf, inputs, device));
        } catch (err) {
          report.error(label, err);
        }
      }
      await call('releaseModels');
    }
  } finally {
    await node.release();
  }
}

/**
 * Where ORT places each node of the webgpu profile's graphs (its verbose log at session creation, read from the
 * page's console): every fixture model in float32 and ERNIE-tiny in int4, no compute op on the CPU.
 */
async function placementChecks(report, call, fixtures, pageLog) {
  const loads = [...MODEL_FIXTURES.map((m) => [m, undefined]), ['ernie-tiny', 'int4']];
  for (const [model, quantize] of loads) {
    const label = `placement ${model}${quantize ? ` ${quantize}` : ''} on webgpu: every compute op on the adapter`;
    try {
      const [first] = (await readdir(join(fixtures, model, 'cases'))).sort();
      pageLog.length = 0;
      const device = await call('placement', model, first, quantize);
      // Console events arrive after the call's answer; the page's last line closes the log.
      for (let i = 0; i < 100 && !pageLog.includes(PLACEMENT_END); i++) await new Promise((r) => setTimeout(r, 100));
      if (!pageLog.includes(PLACEMENT_END)) throw new Error(`the page's log did not reach '${PLACEMENT_END}' within 10 s`);
      const placed = placementOf(pageLog);
      const cpu = Object.entries(placed.CPUExecutionProvider ?? {});
      const misplaced = cpu.filter(([op]) => COMPUTE_OPS.has(op));
      const count = (ops) => Object.values(ops ?? {}).reduce((a, b) => a + b, 0);
      const gpu = Object.entries(placed).filter(([ep]) => ep !== 'CPUExecutionProvider');
      const onGpu = gpu.reduce((n, [, ops]) => n + count(ops), 0);
      const listed = cpu.map(([op, n]) => `${op} ${n}`).join(', ');
      report.check(
        label,
        device === 'webgpu' && onGpu > 0 && misplaced.length === 0,
        `${onGpu} nodes on ${gpu.map(([ep]) => ep).join(', ')}, ${count(placed.CPUExecutionProvider)} on the CPU (${listed || 'none'}); ran on ${device}` +
          (misplaced.length ? `; compute ops on the CPU: ${misplaced.map(([op]) => op).join(', ')}` : ''),
      );
    } catch (err) {
      report.error(label, err);
    }
  }
}

/** { provider: { opType: count } } from ORT's verbose "Node(s) placed on [provider]" lines (subgraphs included). */
export function placementOf(lines) {
  const out = {};
  let provider;
  for (const line of lines) {
    const head = /Node\(s\) placed on \[(\w+)\]/.exec(line);
    if (head) {
      provider = head[1];
      out[provider] ??= {};
      continue;
    }
    const node = /VerifyEachNodeIsAssignedToAnEp\]\s+(\w+) \(/.exec(line);
    if (node && provider) out[provider][node[1]] = (out[provider][node[1]] ?? 0) + 1;
  }
  return out;
}

/** [ok, detail] of one model case: the page's logits and ids against Node's, HF's reported. */
function compareCase(page, ref, hf, inputs, device) {
  const [p, n] = [fromWire(page.logits), fromWire(ref.logits)];
  const problems = [];
  if (page.device !== device) problems.push(`ran on ${page.device}, not ${device}`);
  if (firstDifference(p.dims, n.dims) !== -1) return [false, `logits dims [${p.dims}] != Node's [${n.dims}]`];
  const V = n.dims.at(-1);
  const mask = inputs.attention_mask?.data;
  const real = (i) => !mask || mask[Math.floor(i / V)] === 1n;
  const err = relMaxDiff(p.data, n.data, real);
  const [ids, refIds] = [page.ids.flat(), ref.ids.flat()];
  const at = firstDifference(ids, refIds);
  if (at !== -1) problems.push(`greedy ids differ at ${at}: [${page.ids.join(' | ')}] vs Node's [${ref.ids.join(' | ')}]`);
  const hfLogits = hf.logits && fromWire(hf.logits);
  const hfIds = hf.generated_ids && Array.from(fromWire(hf.generated_ids).data, Number);
  const vsHf = [
    hfLogits ? `vs HF ${fmt(relMaxDiff(p.data, hfLogits.data, real))}` : undefined,
    hfIds ? `ids ${firstDifference(ids, hfIds) === -1 ? '= HF' : '!= HF'}` : undefined,
  ].filter(Boolean);
  const detail = `logits max|diff|/max|ref| ${fmt(err)} (bound ${fmt(LOGITS_TOLERANCE)}; ${vsHf.join(', ')}); ${ids.length} greedy ids ${at === -1 ? 'equal' : 'differ'}; ${page.device}, load ${(page.loadMs / 1000).toFixed(1)} s`;
  const ok = problems.length === 0 && err <= LOGITS_TOLERANCE;
  return [ok, problems.length ? `${problems.join('; ')}; ${detail}` : detail];
}

/** Every processor fixture case in the page against Node's processor on the same files; HF's numbers reported. */
async function processorChecks(report, call, fixtures) {
  for (const family of PROCESSOR_FAMILIES) {
    const dir = join(fixtures, 'processors', family, 'cases');
    for (const name of (await readdir(dir)).sort()) {
      const label = `processor ${family}/${name}`;
      try {
        const json = JSON.parse(await readFile(join(dir, name, 'case.json'), 'utf8'));
        const jpeg = json.images.some((p) => /\.jpe?g$/i.test(p));
        const [page, node, hf] = await Promise.all([
          call('processorCase', family, name),
          nodeProcessorCase(fixtures, family, name),
          wireTensors(join(dir, name, 'expected.safetensors')),
        ]);
        const keys = Object.keys(node).sort();
        const problems = [];
        if (firstDifference(Object.keys(page).sort(), keys) !== -1) problems.push(`outputs ${Object.keys(page)} != Node's ${keys}`);
        const lines = [];
        let pixels;
        for (const key of keys.filter((k) => page[k])) {
          const [p, n] = [fromWire(page[key]), fromWire(node[key])];
          if (firstDifference(p.dims, n.dims) !== -1) {
            problems.push(`${key} dims [${p.dims}] != Node's [${n.dims}]`);
            continue;
          }
          const h = hf[key] && fromWire(hf[key]);
          if (node[key].dtype === 'int64') {
            const at = firstDifference(p.data, n.data);
            if (at !== -1) problems.push(`${key}[${at}] ${p.data[at]} != Node's ${n.data[at]}`);
            lines.push(
              `${key} ${at === -1 ? 'equal' : 'differ'}${h ? (firstDifference(p.data, h.data) === -1 ? ' (= HF)' : ' (!= HF)') : ''}`,
            );
          } else {
            const d = maxAbsDiff(p.data, n.data);
            pixels = Math.max(pixels ?? 0, d);
            if (d > (jpeg ? JPEG_TOLERANCE : PIXEL_TOLERANCE)) problems.push(`${key} max |diff| ${fmt(d)}`);
            lines.push(`${key} max|diff| ${fmt(d)}${h ? ` (vs HF ${fmt(maxAbsDiff(p.data, h.data))})` : ''}`);
          }
        }
        report.check(
          `${label}: ids equal to Node's, pixels within ${fmt(PIXEL_TOLERANCE)}`,
          problems.length === 0,
          [...problems, ...lines].join('; '),
        );
        if (jpeg && pixels !== undefined)
          report.info(`JPEG decoder (${label}, ${json.images.join(', ')}): page vs sharp max |diff| ${fmt(pixels)}`);
      } catch (err) {
        report.error(label, err);
      }
    }
  }
}

/**
 * The browser's image decoder on every file of test-fixtures/processors/image-processors/decode: the RGB bytes
 * Pillow gave (`<file>.rgb`, after HF's EXIF transpose and convert('RGB')), byte for byte; a format the page
 * refuses by name (UNSUPPORTED_PLATFORM: the browser has no decoder for it) is reported with its message. Node's
 * decoder on the same bytes is reported beside.
 */
async function decodeChecks(report, call, fixtures) {
  const dir = join(fixtures, 'processors', 'image-processors', 'decode');
  const index = JSON.parse(await readFile(join(dir, 'index.json'), 'utf8'));
  for (const [name, want] of Object.entries(index)) {
    const label = `image decode ${name} (${want.mode})`;
    try {
      const [page, node, pillow] = await Promise.all([
        call('decodeImage', name),
        nodeDecodeImage(fixtures, name),
        readFile(join(dir, want.rgb)),
      ]);
      const nodeSame = node.rgb && page.rgb && node.rgb.base64 === page.rgb.base64 ? 'Node equal' : `Node ${node.code || 'differs'}`;
      if (page.error !== undefined) {
        const byName = page.code === 'UNSUPPORTED_PLATFORM';
        report.check(
          label,
          byName,
          `refused in the page (${page.code}): ${page.error}; ${node.error ? `Node refuses too (${node.code})` : 'Node decodes it'}`,
        );
        continue;
      }
      const rgb = fromWire(page.rgb).data;
      const dims = page.width === want.width && page.height === want.height;
      const at = dims ? firstDifference(rgb, pillow) : 0;
      report.check(
        label,
        dims && at === -1,
        dims
          ? at === -1
            ? `RGB equal to Pillow's, ${page.width}x${page.height}; ${nodeSame}`
            : `byte ${at}: ${rgb[at]} vs Pillow's ${pillow[at]}`
          : `${page.width}x${page.height}, Pillow ${want.width}x${want.height}`,
      );
    } catch (err) {
      report.error(label, err);
    }
  }
}
