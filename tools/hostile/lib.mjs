// Helpers of the hostile suite: child processes with a timeout, file snapshots (data loss), a small
// safetensors reader and writer, and the comparison with HF's recorded outputs.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstat, open, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';

/** Output kept per stream (the rest is dropped; a case that floods stdout must not fill memory). */
const KEEP_BYTES = 256 * 1024;

/**
 * Runs `argv[0]` with `argv.slice(1)` in its own process group under an address-space limit (so an
 * unbounded read ends as a failed allocation, not as a machine out of memory), kills the group at the
 * timeout. `closeStdoutAfter`: destroy our end of stdout after that many bytes (`| head -c N`).
 */
export function runChild(argv, { cwd, env, timeoutMs, stdin, closeStdoutAfter, memoryKb }) {
  return new Promise((resolvePromise) => {
    const started = performance.now();
    const shell = `ulimit -v ${memoryKb}; exec "$@"`;
    const child = spawn('/bin/sh', ['-c', shell, 'sh', ...argv], {
      cwd,
      env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out = { stdout: [], stderr: [], stdoutBytes: 0, stderrBytes: 0 };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, timeoutMs);
    child.stdout.on('data', (d) => {
      if (out.stdoutBytes < KEEP_BYTES) out.stdout.push(d);
      out.stdoutBytes += d.length;
      if (closeStdoutAfter !== undefined && out.stdoutBytes >= closeStdoutAfter) child.stdout.destroy();
    });
    child.stderr.on('data', (d) => {
      if (out.stderrBytes < KEEP_BYTES) out.stderr.push(d);
      out.stderrBytes += d.length;
    });
    child.stdin.on('error', () => {});
    if (stdin !== undefined) child.stdin.end(stdin);
    else child.stdin.end();
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      // Whatever the command left running in its group (it should leave nothing).
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
      resolvePromise({
        code,
        signal,
        timedOut,
        wallMs: performance.now() - started,
        stdout: Buffer.concat(out.stdout).toString('utf8'),
        stderr: Buffer.concat(out.stderr).toString('utf8'),
      });
    });
  });
}

async function sha256(path) {
  const h = createHash('sha256');
  const f = await open(path, 'r');
  try {
    const buf = Buffer.alloc(1 << 20);
    for (;;) {
      const { bytesRead } = await f.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      h.update(buf.subarray(0, bytesRead));
    }
  } finally {
    await f.close();
  }
  return h.digest('hex');
}

/** What a path is: its type, and for a regular file its size and content hash, for a link its target. */
export async function describe(path) {
  let s;
  try {
    s = await lstat(path);
  } catch {
    return 'absent';
  }
  if (s.isSymbolicLink()) return `symlink -> ${await readlink(path)}`;
  if (s.isDirectory()) return 'directory';
  if (s.isFIFO()) return 'fifo';
  if (s.isCharacterDevice()) return `char device ${s.rdev}`;
  if (s.isBlockDevice()) return `block device ${s.rdev}`;
  if (s.isSocket()) return 'socket';
  // Kernel files (/proc/self/mem cannot be read at 0) by type only; sparse GB-sized inputs by size
  // only (reading them would take the run's time).
  if (/^\/(proc|sys|dev)\//.test(path)) return 'kernel file';
  if (s.size > 256 * 1024 * 1024) return `file ${s.size} bytes (not hashed)`;
  try {
    return `file ${s.size} ${await sha256(path)}`;
  } catch (e) {
    return `file ${s.size} unreadable (${e.code})`;
  }
}

/** Every path under `dir` (not following links), described. */
export async function snapshotTree(dir, into = new Map()) {
  into.set(dir, await describe(dir));
  let entries = [];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return into;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) await snapshotTree(p, into);
    else into.set(p, await describe(p));
  }
  return into;
}

/** The differences between two snapshots, as sentences. */
export function changes(before, after) {
  const out = [];
  for (const [p, d] of before) {
    if (d === 'absent') continue; // a new file is not a loss
    const now = after.get(p) ?? 'absent';
    if (now !== d) out.push(`${p}: ${d} -> ${now}`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// safetensors
// ---------------------------------------------------------------------------------------------

const DTYPES = {
  F32: [Float32Array, 'float32'],
  F64: [Float64Array, 'float64'],
  I64: [BigInt64Array, 'int64'],
  I32: [Int32Array, 'int32'],
  U8: [Uint8Array, 'uint8'],
  F16: [null, 'float16'],
  BF16: [null, 'bfloat16'],
};

/** { name: { dtype, dims, data: number[] } } from a .safetensors file's bytes. */
export function parseSafetensors(buf) {
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [Ctor, dtype] = DTYPES[t.dtype] ?? [null, t.dtype];
    const bytes = buf.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]);
    const copy = new Uint8Array(bytes); // aligned
    const data = Ctor ? Array.from(new Ctor(copy.buffer, 0, copy.length / Ctor.BYTES_PER_ELEMENT), Number) : [];
    out[name] = { dtype, dims: t.shape, data };
  }
  return out;
}

export async function readSafetensors(path) {
  return parseSafetensors(await readFile(path));
}

/** A .safetensors file from { name: { dtype: 'I64'|'F32'|'U8', shape, data } }, and optional metadata. */
export function serializeSafetensors(tensors, metadata) {
  const header = {};
  const parts = [];
  let at = 0;
  for (const [name, t] of Object.entries(tensors)) {
    let bytes;
    if (t.dtype === 'I64') bytes = Buffer.from(new BigInt64Array(t.data.map((x) => BigInt(x))).buffer);
    else if (t.dtype === 'F32') bytes = Buffer.from(new Float32Array(t.data).buffer);
    else if (t.dtype === 'U8') bytes = Buffer.from(Uint8Array.from(t.data));
    else throw new Error(`dtype ${t.dtype}`);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [at, at + bytes.length] };
    parts.push(bytes);
    at += bytes.length;
  }
  if (metadata) header.__metadata__ = metadata;
  let json = Buffer.from(JSON.stringify(header));
  const pad = (8 - (json.length % 8)) % 8;
  json = Buffer.concat([json, Buffer.alloc(pad, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([len, json, ...parts]);
}

// ---------------------------------------------------------------------------------------------
// Comparison with HF's recorded outputs (make_expected.py's stats())
// ---------------------------------------------------------------------------------------------

const REL = 1e-4;

function near(a, b, scale) {
  return Math.abs(a - b) <= REL * Math.max(Math.abs(scale), 1e-6) + 1e-9;
}

/** Differences between our tensors and HF's stats; [] when they match. */
export function compareWithHf(ours, hfOutputs) {
  const diffs = [];
  for (const [name, ref] of Object.entries(hfOutputs)) {
    const t = ours[name];
    if (t === undefined) {
      diffs.push(`${name}: missing (HF returns ${ref.dtype} [${ref.shape}])`);
      continue;
    }
    if (JSON.stringify(t.dims) !== JSON.stringify(ref.shape)) {
      diffs.push(`${name}: shape [${t.dims}] vs HF [${ref.shape}]`);
      continue;
    }
    if (ref.values !== undefined) {
      if (ref.values === null) {
        const sum = t.data.reduce((s, x) => s + x, 0);
        if (sum !== ref.sum) diffs.push(`${name}: sum ${sum} vs HF ${ref.sum}`);
      } else {
        const i = ref.values.findIndex((v, k) => v !== t.data[k]);
        if (i >= 0) diffs.push(`${name}: [${i}] = ${t.data[i]} vs HF ${ref.values[i]}`);
      }
      continue;
    }
    const finite = t.data.filter(Number.isFinite);
    const nonfinite = t.data.length - finite.length;
    const sum = finite.reduce((s, x) => s + x, 0);
    const absSum = finite.reduce((s, x) => s + Math.abs(x), 0);
    const sumSq = finite.reduce((s, x) => s + x * x, 0);
    if (nonfinite !== ref.nonfinite) diffs.push(`${name}: ${nonfinite} non-finite values vs HF ${ref.nonfinite}`);
    if (!near(absSum, ref.abs_sum, ref.abs_sum)) diffs.push(`${name}: sum |x| ${absSum} vs HF ${ref.abs_sum}`);
    if (!near(sumSq, ref.sum_sq, ref.sum_sq)) diffs.push(`${name}: sum x^2 ${sumSq} vs HF ${ref.sum_sq}`);
    if (!near(sum, ref.sum, ref.abs_sum)) diffs.push(`${name}: sum ${sum} vs HF ${ref.sum}`);
    const step = Math.max(1, Math.floor(t.data.length / 64));
    let worst = 0;
    let at = -1;
    ref.sample.forEach((v, k) => {
      if (typeof v !== 'number') return;
      const d = Math.abs(t.data[k * step] - v);
      if (d > worst) {
        worst = d;
        at = k * step;
      }
    });
    if (worst > 1e-3) diffs.push(`${name}: [${at}] = ${t.data[at]} vs HF (sampled) off by ${worst.toExponential(2)}`);
  }
  return diffs;
}
