/**
 * Runs fuzz cases against Checkpoint.open + read of every tensor, and judges
 * each outcome:
 *   - `error:CODE`: a SafetensorsError with a known code whose message names
 *     its file and says what was expected (clean);
 *   - `read`: opened, and every tensor read agrees with an independent
 *     oracle (JSON.parse of the raw header, the format's rules re-checked
 *     here, data compared byte for byte with the file) (clean);
 *   - `BUG:...`: anything else (an untyped error, a message without the
 *     file, an invalid file accepted, a wrong read, too slow, too much memory).
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Checkpoint } from '../checkpoint.js';
import type { Tensor } from '../dtype.js';
import { ERROR_CODES, SafetensorsError } from '../errors.js';
import { type BaseFile, type CaseFile, type FuzzCase, loadBase } from './fuzz-corpus.js';
import { caseAt } from './fuzz-shards.js';

export interface Outcome {
  id: number;
  category: FuzzCase['category'];
  kind: string;
  /** 'read', 'error:CODE', or 'BUG:<what>'. */
  result: string;
  ms: number;
  /** Live ArrayBuffer bytes during the case beyond the baseline (after open, after the reads). */
  extraBytes: number;
  /** Bytes of the case's files (what a bounded reader may hold at most, with the tensors read). */
  caseBytes: number;
  detail?: string;
}

export interface Bounds {
  /** Per-case wall time. */
  ms: number;
  /** Live ArrayBuffer bytes a case may add: `factor` x its file bytes + `slack`. */
  memoryFactor: number;
  memorySlack: number;
}

export const DEFAULT_BOUNDS: Bounds = { ms: 5_000, memoryFactor: 2, memorySlack: 32 << 20 };

const FIXTURES = new URL('../../../../test-fixtures/', import.meta.url);

/** The fixture checkpoints the corpus mutates (the tiny models and the LoRA adapter, plus the Python-written file). */
export function fixtureBases(): BaseFile[] {
  return [
    loadBase('ernie-tiny', new URL('ernie-tiny/model.safetensors', FIXTURES).pathname),
    loadBase('ernie-tiny-bf16', new URL('ernie-tiny-bf16/model.safetensors', FIXTURES).pathname),
    loadBase('granite-tiny', new URL('granite-tiny/model.safetensors', FIXTURES).pathname),
    loadBase('granite-tiny-lora', new URL('granite-tiny-lora/adapter_model.safetensors', FIXTURES).pathname),
    loadBase('python-written', new URL('../__fixtures__/python-written.safetensors', import.meta.url).pathname),
  ];
}

async function materialize(modelDir: string, files: readonly CaseFile[]): Promise<void> {
  await mkdir(modelDir, { recursive: true });
  for (const f of files) {
    const path = resolve(modelDir, f.path);
    await mkdir(dirname(path), { recursive: true });
    if (f.directory) await mkdir(path);
    else if (f.symlinkTo !== undefined) await symlink(f.symlinkTo, path);
    else {
      await writeFile(path, f.bytes ?? new Uint8Array());
      if (f.sparseSize !== undefined) await truncate(path, f.sparseSize);
    }
  }
}

const DTYPE_BYTES: Record<string, number> = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1 };
const isCount = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;

interface OracleEntry {
  dtype: string;
  shape: number[];
  bytes: Uint8Array;
}

/** The oracle's own reading of one file: null when the file breaks a rule of the format. */
function oracleFile(bytes: Uint8Array): Map<string, OracleEntry> | string {
  if (bytes.length < 8) return 'shorter than 8 bytes';
  const n = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(bytes.length - 8) || n > 100_000_000n) return 'header length past the end or over the cap';
  const hl = Number(n);
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes.subarray(8, 8 + hl)));
  } catch {
    return 'header not UTF-8 JSON';
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) return 'header not an object';
  const dataLength = bytes.length - 8 - hl;
  const out = new Map<string, OracleEntry>();
  const spans: Array<[number, number]> = [];
  for (const [name, e] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (e === null) continue;
      if (typeof e !== 'object' || Array.isArray(e) || !Object.values(e as object).every((v) => typeof v === 'string'))
        return 'bad metadata';
      continue;
    }
    if (typeof e !== 'object' || e === null || Array.isArray(e)) return `entry ${name} not an object`;
    const { dtype, shape, data_offsets: o } = e as Record<string, unknown>;
    if (typeof dtype !== 'string' || !(dtype in DTYPE_BYTES)) return `entry ${name}: dtype`;
    if (!Array.isArray(shape) || !shape.every(isCount)) return `entry ${name}: shape`;
    const count = shape.reduce((a: number, b: number) => a * b, 1);
    if (!Number.isSafeInteger(count)) return `entry ${name}: count`;
    if (!Array.isArray(o) || o.length !== 2 || !o.every(isCount)) return `entry ${name}: offsets`;
    const [begin, end] = o as [number, number];
    if (begin > end) return `entry ${name}: offsets reversed`;
    if (end - begin !== count * DTYPE_BYTES[dtype]!) return `entry ${name}: size`;
    if (end > dataLength) return `entry ${name}: past the end`;
    spans.push([begin, end]);
    out.set(name, { dtype, shape, bytes: bytes.subarray(8 + hl + begin, 8 + hl + end) });
  }
  spans.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let cursor = 0;
  for (const [b, e] of spans) {
    if (b !== cursor) return 'tensors do not tile the data section';
    cursor = e;
  }
  if (cursor !== dataLength) return 'trailing bytes';
  return out;
}

/** The oracle's expected tensors for a case that opened, or why it should not have opened. */
function oracle(c: FuzzCase, modelDir: string): Map<string, OracleEntry & { file: string }> | string {
  const byPath = new Map(c.files.map((f) => [resolve(modelDir, f.path), f]));
  const target = resolve(modelDir, c.open);
  let shards: string[];
  let weightMap: Record<string, string> = {};
  // transformers' rule for a directory: model.safetensors, else the shards of model.safetensors.index.json.
  const weights = join(modelDir, 'model.safetensors');
  const indexFile = c.open.endsWith('.json')
    ? target
    : target === modelDir && byPath.get(weights)?.bytes === undefined && byPath.has(join(modelDir, 'model.safetensors.index.json'))
      ? join(modelDir, 'model.safetensors.index.json')
      : undefined;
  if (indexFile !== undefined) {
    const f = byPath.get(indexFile);
    if (f?.bytes === undefined || f.sparseSize !== undefined) return 'index missing or oversized';
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder().decode(f.bytes));
    } catch {
      return 'index not JSON';
    }
    const wm = (json as { weight_map?: unknown } | null)?.weight_map;
    if (typeof wm !== 'object' || wm === null || Array.isArray(wm)) return 'no weight_map object';
    if (!Object.values(wm).every((v) => typeof v === 'string' && v !== '' && !v.startsWith('/') && !v.startsWith('..')))
      return 'bad shard name';
    weightMap = wm as Record<string, string>;
    shards = [...new Set(Object.values(weightMap).map((v) => resolve(modelDir, v)))];
  } else {
    shards = [target === modelDir ? weights : target];
  }
  const out = new Map<string, OracleEntry & { file: string }>();
  for (const s of shards) {
    const f = byPath.get(s);
    if (f === undefined || f.bytes === undefined || f.directory || f.symlinkTo !== undefined || f.sparseSize !== undefined)
      return `shard ${s} missing, a directory or a link`;
    const entries = oracleFile(f.bytes);
    if (typeof entries === 'string') return `${s}: ${entries}`;
    for (const [name, e] of entries) {
      if (out.has(name)) return `tensor ${name} in two shards`;
      out.set(name, { ...e, file: s });
    }
  }
  for (const [t, s] of Object.entries(weightMap))
    if (out.get(t)?.file !== resolve(modelDir, s)) return `weight_map places ${t} in ${s}, which lacks it`;
  return out;
}

const equalBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);
const bytesOf = (t: Tensor) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);

/** Runs one case in a fresh directory under `root` and judges its outcome. */
export async function runCase(c: FuzzCase, root: string, bounds: Bounds = DEFAULT_BOUNDS): Promise<Outcome> {
  const caseRoot = join(root, `case-${c.id}`);
  const modelDir = join(caseRoot, 'model');
  await materialize(modelDir, c.files);
  const caseBytes = c.files.reduce((n, f) => n + (f.bytes?.length ?? 0), 0);
  const base = process.memoryUsage().arrayBuffers;
  let extraBytes = 0;
  const sample = () => {
    extraBytes = Math.max(extraBytes, process.memoryUsage().arrayBuffers - base);
  };
  const t0 = performance.now();
  let result: string;
  let detail: string | undefined;
  let ckpt: Checkpoint | undefined;
  try {
    ckpt = await Checkpoint.open(resolve(modelDir, c.open));
    sample();
    const read = new Map<string, Tensor>();
    for (const name of ckpt.names()) read.set(name, await ckpt.read(name));
    sample();
    const expected = oracle(c, modelDir);
    if (typeof expected === 'string') {
      result = 'BUG:accepted-invalid';
      detail = expected;
    } else if (read.size !== expected.size || ![...expected.keys()].every((n) => read.has(n))) {
      result = 'BUG:wrong-names';
      detail = `read ${[...read.keys()].slice(0, 5).join(', ')}...; expected ${[...expected.keys()].slice(0, 5).join(', ')}...`;
    } else {
      result = 'read';
      for (const [name, t] of read) {
        const e = expected.get(name)!;
        const sameAsBase =
          c.same === undefined ||
          (() => {
            const b = c.same.header[name] as { dtype: string; shape: number[]; data_offsets: [number, number] } | undefined;
            const data = c.same.bytes.subarray(8 + c.same.headerLength);
            return (
              b !== undefined &&
              b.dtype === t.dtype &&
              JSON.stringify(b.shape) === JSON.stringify(t.shape) &&
              equalBytes(bytesOf(t), data.subarray(b.data_offsets[0], b.data_offsets[1]))
            );
          })();
        if (t.dtype !== e.dtype || JSON.stringify(t.shape) !== JSON.stringify(e.shape) || !equalBytes(bytesOf(t), e.bytes) || !sameAsBase) {
          result = 'BUG:wrong-read';
          detail = `tensor ${name}`;
          break;
        }
      }
      if (result === 'read' && c.same !== undefined && read.size !== c.same.tensors.length) {
        result = 'BUG:wrong-read';
        detail = `expected the base's ${c.same.tensors.length} tensors, read ${read.size}`;
      }
    }
  } catch (err) {
    sample();
    if (!(err instanceof SafetensorsError)) {
      result = `BUG:untyped:${(err as Error)?.name}`;
      detail = String((err as Error)?.message).slice(0, 200);
    } else if (!ERROR_CODES.includes(err.code)) {
      result = 'BUG:unknown-code';
      detail = err.code;
    } else if (err.file === undefined || !err.message.includes(err.file) || !/expected/i.test(err.message)) {
      result = `BUG:unclear-message:${err.code}`;
      detail = err.message.slice(0, 200);
    } else {
      result = `error:${err.code}`;
    }
  } finally {
    await ckpt?.close();
  }
  const ms = performance.now() - t0;
  await rm(caseRoot, { recursive: true, force: true });
  if (!result.startsWith('BUG') && ms > bounds.ms) {
    detail = `${result} after ${ms.toFixed(0)} ms`;
    result = 'BUG:slow';
  }
  if (!result.startsWith('BUG') && extraBytes > bounds.memoryFactor * caseBytes + bounds.memorySlack) {
    detail = `${result} with ${extraBytes} live bytes for ${caseBytes} bytes of files`;
    result = 'BUG:memory';
  }
  return { id: c.id, category: c.category, kind: c.kind, result, ms, extraBytes, caseBytes, ...(detail === undefined ? {} : { detail }) };
}

export interface Summary {
  cases: number;
  byCategory: Record<string, { cases: number; clean: number; maxMs: number }>;
  outcomes: Record<string, number>;
  bugs: Outcome[];
  totalMs: number;
  maxMs: number;
  slowest: Outcome;
  maxExtraBytes: number;
  /** Growth of the process's peak RSS during the run. */
  peakRssGrowth: number;
}

/** Runs cases `from` .. `to - 1` of the corpus for `seed` (every `step`-th one). */
export async function runCorpus(opts: {
  seed: number;
  from?: number;
  to: number;
  step?: number;
  bounds?: Bounds;
  onCase?: (o: Outcome) => void;
}): Promise<Summary> {
  const bases = fixtureBases();
  // tmpfs where there is one: the corpus writes and deletes ~1 GB of small files.
  const root = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'vlmkit-fuzz-'));
  const rssBefore = process.memoryUsage().rss;
  const outcomes: Outcome[] = [];
  const t0 = performance.now();
  try {
    for (let i = opts.from ?? 0; i < opts.to; i += opts.step ?? 1) {
      const o = await runCase(caseAt(bases, opts.seed, i), root, opts.bounds);
      outcomes.push(o);
      opts.onCase?.(o);
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
  const totalMs = performance.now() - t0;
  const byCategory: Summary['byCategory'] = {};
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    byCategory[o.category] ??= { cases: 0, clean: 0, maxMs: 0 };
    const cat = byCategory[o.category]!;
    cat.cases++;
    if (!o.result.startsWith('BUG')) cat.clean++;
    cat.maxMs = Math.max(cat.maxMs, o.ms);
    const key = `${o.category} ${o.result}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  const slowest = outcomes.reduce((a, b) => (b.ms > a.ms ? b : a));
  return {
    cases: outcomes.length,
    byCategory,
    outcomes: Object.fromEntries(Object.entries(counts).sort()),
    bugs: outcomes.filter((o) => o.result.startsWith('BUG')),
    totalMs,
    maxMs: slowest.ms,
    slowest,
    maxExtraBytes: Math.max(...outcomes.map((o) => o.extraBytes)),
    peakRssGrowth: process.resourceUsage().maxRSS * 1024 - rssBefore,
  };
}
