// `pnpm bench --ernie28b-full`: ERNIE-4.5-VL-28B-A3B at its published width on this machine, vlmkit only (PyTorch
// would hold the bf16 checkpoint in memory: 56 GB for the published 28 layers). Per text-layer count asked for: the
// disk checked first (checkpoint + graph cache + a spare), the random bf16 checkpoint made (streamed), then each in
// its own process: a first load (empty graph cache), a cached load with generate (page cache of the graph cache and
// the checkpoint dropped first), a cached load alone (page cache as the previous process left it), a float32 decoder
// load (twice the checkpoint in memory: it cannot fit) and the cached load with less memory available, both of which
// must stop with INSUFFICIENT_MEMORY before ORT allocates the weights. Two or more counts give per-layer figures
// (difference / layers) and their extrapolation to the published 28 layers.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dropPageCache, filesUnder } from './page-cache.mjs';

const GB = 1e9;
const PUBLISHED_LAYERS = 28;
/**
 * Graph cache bytes per checkpoint byte of the weights a mode quantizes (int4: 4-bit blocks of 32 and their
 * scales, 0.321 measured at 2 layers; int8 0.57), and of the vision weights kept float32 (cast from bf16).
 */
const CACHE_PER_BYTE = { int4: 0.33, int8: 0.57, float32: 2 };

const dirBytes = (d) => {
  try {
    return filesUnder(d).reduce((n, f) => n + statSync(f).size, 0);
  } catch {
    return 0;
  }
};
/** The bytes of the decoder's graph-cache files under `d` (finished or being written). */
const decoderBytes = (d) => {
  try {
    return filesUnder(d)
      .filter((f) => /vlmkit-ernie-decode[^/]*$/.test(f))
      .reduce((n, f) => n + statSync(f).size, 0);
  } catch {
    return 0;
  }
};
const freeBytes = (d) => {
  const s = statfsSync(d);
  return s.bavail * s.bsize;
};

/**
 * Runs the mode. `h`: bench.mjs's helpers and settings ({ cache, threads, newTokens, repeats, layers: number[],
 * visionLayers, quantize, quantizeVision, spareGb, keep, torchSide, vlmkitSide, child, log, machine }).
 */
export async function ernie28bFull(h) {
  const { cache, log } = h;
  const points = [];
  const vision = h.quantizeVision ?? 'float32';
  for (const [i, layers] of h.layers.entries()) {
    const dir = join(cache, `ernie28b-l${layers}-v${h.visionLayers}`);
    const sizeArgs = ['size', '--config', 'ernie28b', '--dir', dir, '--vision-layers', String(h.visionLayers)];
    const size = await h.torchSide([...sizeArgs, '--layers', String(layers)], `size ${layers}`);
    if (size.error) throw new Error(`ernie28b size: ${size.error}`);
    const disk = await diskPlan(h, dir, layers, size, vision, sizeArgs);
    log(`ernie28b ${layers} layers: ${disk.text}`);
    if (!disk.fits) {
      points.push({ layers, disk });
      continue;
    }
    log(`ernie28b ${layers} layers: checkpoint ${dir} (made once, streamed)`);
    const t0 = performance.now();
    const info = await h.torchSide(
      ['make', '--dir', dir, '--config', 'ernie28b', '--layers', String(layers), '--vision-layers', String(h.visionLayers)],
      `make ${layers}`,
    );
    if (info.error) throw new Error(`could not build the ernie28b checkpoint: ${info.error}`);
    const makeS = (performance.now() - t0) / 1e3;
    const graphs = join(cache, 'graphs', `ernie28b-l${layers}-${h.quantize}-${vision}`);
    const opts = {
      quantize: h.quantize,
      ...(h.quantizeVision ? { load: { quantize: { decoder: h.quantize, vision: h.quantizeVision } } } : {}),
    };
    log(`ernie28b ${layers} layers: first load (empty graph cache), ${h.quantize} decoder, ${vision} vision`);
    const cold = await h.vlmkitSide('cold', dir, graphs, opts, `first load ${layers}`);
    const cacheBytes = dirBytes(graphs);
    const checkpointBytes = readdirSync(dir)
      .filter((f) => f.endsWith('.safetensors') && f !== 'inputs.safetensors')
      .reduce((n, f) => n + statSync(join(dir, f)).size, 0);
    const dropped = dropPageCache([...filesUnder(graphs), ...filesUnder(dir)]);
    log(`ernie28b ${layers} layers: cached load (page cache ${dropped ? 'dropped' : 'not dropped'}) + generate ${h.newTokens} tokens`);
    const run = await h.vlmkitSide('run', dir, graphs, { ...opts, repeats: h.repeats, newTokens: h.newTokens }, `run ${layers}`);
    log(`ernie28b ${layers} layers: cached load alone (page cache warm)`);
    const warm = await h.vlmkitSide('load', dir, graphs, opts, `cached load ${layers}`);
    const refused = await refusal(h, dir, layers);
    const pressed = await underPressure(h, dir, graphs, opts, cacheBytes, run.peak_rss_mb);
    const point = { layers, vision_layers: h.visionLayers, disk, make_s: makeS, info, cold, run, warm, refused, pressed };
    Object.assign(point, { cache_bytes: cacheBytes, checkpoint_bytes: checkpointBytes, page_cache_dropped: dropped });
    points.push(point);
    if (!h.keep && i < h.layers.length - 1) {
      log(`ernie28b ${layers} layers: removing its checkpoint and graph caches (disk for the next count; --ernie28b-keep keeps them)`);
      rmSync(dir, { recursive: true, force: true });
      rmSync(graphs, { recursive: true, force: true });
    }
  }
  mkdirSync(join(cache, 'results'), { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  writeFileSync(join(cache, 'results', `ernie28b-full-${stamp}.json`), JSON.stringify({ machine: h.machine, points }, null, 1));
  const md = report(h, points, vision);
  writeFileSync(join(cache, 'results', `ernie28b-full-${stamp}.md`), md);
  console.log(md);
  log(`results: ${join(cache, 'results', `ernie28b-full-${stamp}.json`)}`);
}

/**
 * Whether the checkpoint (when not made yet), the graph cache (estimated: CACHE_PER_BYTE) and the spare fit on the
 * cache's disk; when not, the largest text-layer count that does (bytes per layer from the size one layer less).
 */
async function diskPlan(h, dir, layers, size, vision, sizeArgs) {
  const made = existsSync(join(dir, 'bench.json'));
  const cacheEst = size.decoder_linear_bytes * CACHE_PER_BYTE[h.quantize] + size.vision_bytes * CACHE_PER_BYTE[vision];
  const need = (made ? 0 : size.checkpoint_bytes) + cacheEst + h.spareGb * GB;
  const free = freeBytes(h.cache);
  const text = `disk: checkpoint ${(size.checkpoint_bytes / GB).toFixed(1)} GB${made ? ' (made)' : ''} + ${h.quantize} graph cache ~${(cacheEst / GB).toFixed(1)} GB + spare ${h.spareGb} GB; ${(free / GB).toFixed(1)} GB free`;
  if (need <= free) return { fits: true, need, free, cache_estimate: cacheEst, text };
  const less = await h.torchSide([...sizeArgs, '--layers', String(layers - 1)], `size ${layers - 1}`);
  const perLayer =
    size.checkpoint_bytes - less.checkpoint_bytes + (size.decoder_linear_bytes - less.decoder_linear_bytes) * CACHE_PER_BYTE[h.quantize];
  const largest = layers - Math.ceil((need - free) / perLayer);
  return {
    fits: false,
    need,
    free,
    cache_estimate: cacheEst,
    per_layer_bytes: perLayer,
    largest_fitting: largest,
    text: `${text}: does NOT fit (needs ${(need / GB).toFixed(1)} GB); a text layer costs ${(perLayer / GB).toFixed(2)} GB (checkpoint + cache): ${largest} layers fit`,
  };
}

/**
 * A float32 decoder at this size: ORT would hold the bf16 weights cast to float32 (twice the checkpoint), so the
 * load must stop with INSUFFICIENT_MEMORY before the decoder is built. Its own graph cache, removed after, and
 * killed if it writes more than 1 GB of decoder files there (a build writing float32 copies would fill the disk
 * first); the float32 vision encoder, which fits, is built and written before the decoder is checked.
 */
async function refusal(h, dir, layers) {
  const graphs = join(h.cache, 'graphs', `ernie28b-l${layers}-float32-refusal`);
  rmSync(graphs, { recursive: true, force: true });
  h.log(`ernie28b ${layers} layers: float32 decoder load (expected: INSUFFICIENT_MEMORY when it cannot fit)`);
  const t0 = performance.now();
  const res = await h.vlmkitSide('load', dir, graphs, {}, `float32 load ${layers}`, () =>
    decoderBytes(graphs) > GB
      ? `killed by the bench: the float32 load wrote more than 1 GB of decoder files to its graph cache`
      : undefined,
  );
  const written = dirBytes(graphs);
  const decoderWritten = decoderBytes(graphs);
  rmSync(graphs, { recursive: true, force: true });
  return { ...res, ms: performance.now() - t0, cache_written_bytes: written, decoder_written_bytes: decoderWritten };
}

/**
 * The same cached load with less memory available: a second process holds memory until MemAvailable is 3/4 of the
 * graph cache (at least --mem-floor-mb + 1 GB), so that the decoder's weights cannot fit; the load must stop with
 * INSUFFICIENT_MEMORY before its session allocates them. Run only when what it holds is less than the measured
 * run's own peak RSS: the check never squeezes the machine's other users more than the run did.
 */
async function underPressure(h, dir, graphs, opts, cacheBytes, runRssMb) {
  const target = Math.max(cacheBytes * 0.75, (h.memFloorMb + 1024) * 2 ** 20);
  const hold = memAvailableBytes() - target;
  const cap = (runRssMb ?? 0) * 2 ** 20;
  if (hold <= 0 || hold > cap) {
    return { error: `not run: it would hold ${(hold / GB).toFixed(1)} GB, more than the run's peak RSS (${(cap / GB).toFixed(1)} GB)` };
  }
  h.log(`holding ${(hold / GB).toFixed(1)} GB in another process (MemAvailable to ~${(target / GB).toFixed(1)} GB), then the cached load`);
  const holder = spawn(process.execPath, ['-e', HOLD, String(hold)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const held = await new Promise((done) => {
    holder.stdout.once('data', () => done(true));
    holder.once('exit', () => done(false));
  });
  if (!held) return { error: 'not run: the process holding memory ended before it held it' };
  const available = memAvailableBytes();
  try {
    const res = await h.vlmkitSide('load', dir, graphs, opts, 'cached load under memory pressure');
    return { ...res, held_bytes: hold, available_bytes: available };
  } finally {
    holder.kill('SIGKILL');
  }
}

/** Allocates and touches argv[1] bytes in 256 MiB pieces, says so on stdout, and waits to be killed. */
const HOLD = `const n = Number(process.argv[1]); const keep = [];
for (let got = 0; got < n; got += 2 ** 28) keep.push(Buffer.alloc(Math.min(2 ** 28, n - got), 1));
process.stdout.write('held'); setInterval(() => keep.length, 1e6);`;

function memAvailableBytes() {
  const m = /MemAvailable:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) * 1024 : Number.POSITIVE_INFINITY;
}

const f0 = (x) => (x === undefined || x === null || Number.isNaN(x) ? '-' : x.toFixed(0));
const f1 = (x) => (x === undefined || x === null || Number.isNaN(x) ? '-' : x.toFixed(1));
const f2 = (x) => (x === undefined || x === null || Number.isNaN(x) ? '-' : x.toFixed(2));

/** The figures of one measured point, by name (undefined where its process failed). */
function figures(p) {
  const run = p.run?.error ? {} : (p.run ?? {});
  const seq = p.info?.seq;
  return {
    checkpoint_gb: p.checkpoint_bytes / GB,
    cache_gb: p.cache_bytes / GB,
    make_s: p.make_s,
    first_load_s: p.cold?.load_cold_ms / 1e3,
    first_load_rss_gb: p.cold?.peak_rss_mb / 1024,
    cached_load_s: run.load_ms / 1e3,
    warm_load_s: p.warm?.load_ms / 1e3,
    run_rss_gb: run.peak_rss_mb / 1024,
    vision_ms: run.vision_ms,
    prefill_ms: run.prefill_ms,
    prefill_tps: seq && run.prefill_ms ? seq / (run.prefill_ms / 1e3) : undefined,
    decode_ms: run.decode_ms,
    decode_tps: run.decode_ms ? 1e3 / run.decode_ms : undefined,
  };
}

const ROWS = [
  ['checkpoint on disk (bf16)', 'checkpoint_gb', f1, 'GB'],
  ['graph cache on disk', 'cache_gb', f1, 'GB'],
  ['checkpoint made in (streamed)', 'make_s', f0, 's'],
  ['first load (empty graph cache)', 'first_load_s', f1, 's'],
  ['first load peak RSS (VmHWM)', 'first_load_rss_gb', f2, 'GiB'],
  ['cached load (page cache dropped)', 'cached_load_s', f1, 's'],
  ['cached load (page cache warm)', 'warm_load_s', f1, 's'],
  ['load + generate peak RSS (VmHWM)', 'run_rss_gb', f2, 'GiB'],
  ['vision (1024 patches -> 256 tokens)', 'vision_ms', f0, 'ms'],
  ['prefill, 1280 tokens', 'prefill_ms', f0, 'ms'],
  ['prefill', 'prefill_tps', f1, 'tokens/s'],
  ['decode, per token (median step)', 'decode_ms', f0, 'ms'],
  ['decode', 'decode_tps', f2, 'tokens/s'],
];

function report(h, points, vision) {
  const m = h.machine;
  const lines = [
    `### ERNIE-4.5-VL-28B-A3B shape, vlmkit ${h.quantize} decoder, ${vision} vision, ${h.threads} threads`,
    '',
    `${m.cpu} (${m.flags.join(', ')}), ${m.cores} cores, ${m.mem_gb} GB; commit ${m.commit}; Node ${m.node}, onnxruntime-node ${m.onnxruntime}; ${h.newTokens} greedy tokens, ${h.repeats} timed generate after one untimed.`,
    '',
  ];
  for (const p of points.filter((x) => !x.disk.fits)) lines.push(`- ${p.layers} text layers: ${p.disk.text}.`);
  const done = points.filter((x) => x.disk.fits);
  if (done.length) {
    const fig = done.map(figures);
    const head = ['', ...done.map((p) => `${p.layers} text / ${p.vision_layers} vision layers`)];
    const per = done.length > 1 ? perLayer(done, fig) : undefined;
    if (per) head.push('per text layer (difference)', `28 layers (extrapolated)`);
    lines.push(`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`);
    for (const [label, key, fmt, unit] of ROWS) {
      const cells = [label, ...fig.map((f) => `${fmt(f[key])} ${unit}`)];
      if (per)
        cells.push(
          per.layer[key] === undefined ? '-' : `${fmt(per.layer[key])} ${unit}`,
          per.at28[key] === undefined ? '-' : `${fmt(per.at28[key])} ${unit}`,
        );
      lines.push(`| ${cells.join(' | ')} |`);
    }
    lines.push('');
    for (const p of done) {
      const errs = ['cold', 'run', 'warm'].filter((k) => p[k]?.error).map((k) => `${k}: ${p[k].error}`);
      const r = p.refused;
      const refusal = r.error
        ? `float32 decoder load: ${r.error}`
        : r.error_code
          ? `float32 decoder load refused with ${r.error_code} after ${f1(r.ms / 1e3)} s, peak RSS ${f2(r.peak_rss_mb / 1024)} GiB, ${f2(r.cache_written_bytes / GB)} GB written to its graph cache (decoder files: ${f2((r.decoder_written_bytes ?? 0) / GB)} GB): "${r.error_message}"`
          : `float32 decoder load not refused (it fits): loaded in ${f1(r.load_ms / 1e3)} s, peak RSS ${f2(r.peak_rss_mb / 1024)} GiB, ${f2(r.cache_written_bytes / GB)} GB written to its graph cache`;
      const q = p.pressed;
      const pressure = q.error
        ? `cached load under memory pressure: ${q.error}`
        : q.error_code
          ? `cached ${h.quantize} load with ${f1(q.available_bytes / GB)} GB available (another process holding ${f1(q.held_bytes / GB)} GB) refused with ${q.error_code}, peak RSS ${f2(q.peak_rss_mb / 1024)} GiB: "${q.error_message}"`
          : `cached ${h.quantize} load with ${f1(q.available_bytes / GB)} GB available NOT refused: loaded in ${f1(q.load_ms / 1e3)} s, peak RSS ${f2(q.peak_rss_mb / 1024)} GiB`;
      const t = p.cold?.timings;
      lines.push(
        `- ${p.layers} layers: first load = graphs built and quantized ${f1(t?.buildMs / 1e3)} s + sessions ${f1(t?.sessionMs / 1e3)} s; ${refusal}; ${pressure}${errs.length ? `; FAILED ${errs.join('; ')}` : ''}.`,
      );
    }
    if (per) {
      lines.push(
        `- Per text layer: (figure at ${done.at(-1).layers} layers - figure at ${done[0].layers}) / ${done.at(-1).layers - done[0].layers}; 28 layers: the figure at ${done.at(-1).layers} + ${PUBLISHED_LAYERS - done.at(-1).layers} x per layer, an extrapolation (tokens/s from the extrapolated times), not a measurement.`,
      );
    }
  }
  return lines.join('\n');
}

/** Per-layer differences between the first and last measured points, and the extrapolation to 28 layers. */
function perLayer(done, fig) {
  const a = fig[0];
  const b = fig.at(-1);
  const n = done.at(-1).layers - done[0].layers;
  const extra = PUBLISHED_LAYERS - done.at(-1).layers;
  const layer = {};
  const at28 = {};
  // Rates follow from the extrapolated times, not from differences of rates.
  for (const [, key] of ROWS.filter(([, k]) => !k.endsWith('_tps'))) {
    if (a[key] === undefined || b[key] === undefined || Number.isNaN(a[key]) || Number.isNaN(b[key])) continue;
    layer[key] = (b[key] - a[key]) / n;
    at28[key] = b[key] + extra * layer[key];
  }
  const seq = done[0].info.seq;
  if (at28.prefill_ms) at28.prefill_tps = seq / (at28.prefill_ms / 1e3);
  if (at28.decode_ms) at28.decode_tps = 1e3 / at28.decode_ms;
  return { layer, at28 };
}
