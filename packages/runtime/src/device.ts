/**
 * Execution-provider choice. onnxruntime-node 1.29 ships the CPU (and WebGPU)
 * EP in its npm package; the CUDA EP is two extra shared libraries that must
 * sit next to its native binding (`bin/napi-v6/<platform>/<arch>/`), where ORT
 * looks for them when a session asks for 'cuda'. pnpm 10 skips the package's
 * install script that would fetch them, so they are usually absent.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export type Device = 'cpu' | 'cuda';
export type DeviceRequest = 'auto' | Device;

/** The libraries ORT loads for the CUDA EP: the shared provider bridge first, then the EP. */
export const CUDA_PROVIDER_FILES: readonly string[] = ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'];

/** Where onnxruntime-node keeps its native binding and looks for provider libraries. */
export function ortBindingDir(): string {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('onnxruntime-node'); // .../onnxruntime-node/dist/index.js
  return join(dirname(entry), '..', 'bin', 'napi-v6', process.platform, process.arch);
}

export interface CudaBinaries {
  dir: string;
  present: boolean;
  missing: string[];
  /**
   * When the EP files are present: the libraries they need that the loader
   * would not find (empty when all are found; absent when not checked).
   */
  missingLibraries?: MissingLibrary[];
}

export interface MissingLibrary {
  /** The soname, e.g. 'libcublas.so.13'. */
  name: string;
  /** What it is, e.g. 'cuBLAS' (see CUDA_LIBRARY_ROLES). */
  role: string;
  /** The EP file that needs it. */
  neededBy: string;
}

export function findCudaBinaries(dir: string = ortBindingDir(), lookup?: LibraryLookup): CudaBinaries {
  const missing = CUDA_PROVIDER_FILES.filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0) return { dir, present: false, missing };
  return { dir, present: true, missing, missingLibraries: missingCudaLibraries(dir, lookup ?? systemLibraryLookup()) };
}

/** What each library the CUDA EP loads is, for messages that say what to install. */
export const CUDA_LIBRARY_ROLES: Readonly<Record<string, string>> = {
  'libcudart.so': 'the CUDA runtime',
  'libcublas.so': 'cuBLAS',
  'libcublasLt.so': 'cuBLASLt (cuBLAS)',
  'libcurand.so': 'cuRAND',
  'libcufft.so': 'cuFFT',
  'libcudnn.so': 'cuDNN',
  'libcuda.so': 'the NVIDIA driver',
  'libnvrtc.so': 'NVRTC',
};

/**
 * Libraries the CUDA EP opens with dlopen when it starts rather than listing
 * them in its dynamic section, so an ELF reader does not see them: cuDNN
 * (the CUDA stream's cudnnCreate runs for every session).
 */
export const CUDA_EP_DLOPENED: readonly string[] = ['libcudnn.so.9'];

/** Where the dynamic loader looks: LD_LIBRARY_PATH, ldconfig's cache, the default directories. */
export interface LibraryLookup {
  ldLibraryPath: readonly string[];
  /** The sonames in ldconfig's cache (`ldconfig -p`). */
  cache: ReadonlySet<string>;
  defaultDirs: readonly string[];
}

const DEFAULT_LIBRARY_DIRS = ['/lib64', '/usr/lib64', '/lib', '/usr/lib', '/lib/x86_64-linux-gnu', '/usr/lib/x86_64-linux-gnu'];

/** This process's view. LD_LIBRARY_PATH counts as it was when Node started: ld.so reads it only then. */
export function systemLibraryLookup(env: NodeJS.ProcessEnv = process.env): LibraryLookup {
  const cache = new Set<string>();
  for (const ldconfig of ['ldconfig', '/sbin/ldconfig', '/usr/sbin/ldconfig']) {
    try {
      const out = execFileSync(ldconfig, ['-p'], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] });
      // "\tlibcublas.so.13 (libc6,x86-64) => /usr/local/cuda/lib64/libcublas.so.13"
      for (const m of out.matchAll(/^\s+(\S+) \(/gm)) cache.add(m[1]!);
      break;
    } catch {
      // not at this path (or not Linux): try the next, else the cache stays empty
    }
  }
  const ldLibraryPath = (env.LD_LIBRARY_PATH ?? '').split(':').filter((d) => d !== '');
  return { ldLibraryPath, cache, defaultDirs: DEFAULT_LIBRARY_DIRS };
}

/** Would the loader find `name` for a library in `origin` with these RUNPATH entries? */
export function findLibrary(name: string, lookup: LibraryLookup, runpath: readonly string[] = [], origin = '.'): string | undefined {
  const dirs = [...lookup.ldLibraryPath, ...runpath.map((d) => d.replace(/\$(ORIGIN|\{ORIGIN\})/g, origin))];
  for (const d of dirs) if (existsSync(join(d, name))) return join(d, name);
  if (lookup.cache.has(name)) return `${name} (ldconfig cache)`;
  for (const d of lookup.defaultDirs) if (existsSync(join(d, name))) return join(d, name);
  return undefined;
}

/** The EP's libraries (DT_NEEDED of each EP file, plus CUDA_EP_DLOPENED) that the loader would not find. */
export function missingCudaLibraries(dir: string, lookup: LibraryLookup): MissingLibrary[] {
  const missing: MissingLibrary[] = [];
  const seen = new Set<string>();
  for (const file of CUDA_PROVIDER_FILES) {
    let elf: ElfDynamic;
    try {
      elf = readElfDynamic(join(dir, file));
    } catch (e) {
      // A truncated download or an LFS pointer: ORT's dlopen would fail on the EP file itself.
      missing.push({ name: file, role: `the EP itself, unreadable: ${(e as Error).message}`, neededBy: 'onnxruntime' });
      continue;
    }
    const names = file === 'libonnxruntime_providers_cuda.so' ? [...elf.needed, ...CUDA_EP_DLOPENED] : elf.needed;
    for (const name of names) {
      if (seen.has(name)) continue;
      seen.add(name);
      if (findLibrary(name, lookup, elf.runpath, dir) !== undefined) continue;
      const role = CUDA_LIBRARY_ROLES[name.replace(/(\.so)\..*$/, '$1')] ?? 'a system library';
      missing.push({ name, role, neededBy: file });
    }
  }
  return missing;
}

export interface ElfDynamic {
  /** DT_NEEDED: the sonames the loader must find, in order. */
  needed: string[];
  /** DT_RUNPATH (or the older DT_RPATH) directories. */
  runpath: string[];
}

/**
 * The dynamic section of a 64-bit little-endian ELF shared library, read in
 * place (the CUDA EP is 230 MB; only its headers and string table are read).
 * Throws for anything else, naming the file.
 */
export function readElfDynamic(file: string): ElfDynamic {
  const fd = openSync(file, 'r');
  try {
    const read = (offset: number, length: number): Buffer => {
      const b = Buffer.alloc(length);
      const n = readSync(fd, b, 0, length, offset);
      return b.subarray(0, n);
    };
    const h = read(0, 64);
    if (h.length < 64 || h.readUInt32BE(0) !== 0x7f454c46) throw new Error(`${file} is not an ELF file`);
    if (h[4] !== 2 || h[5] !== 1) throw new Error(`${file} is not a 64-bit little-endian ELF file`);
    const phoff = Number(h.readBigUInt64LE(0x20));
    const phentsize = h.readUInt16LE(0x36);
    const phnum = h.readUInt16LE(0x38);
    const loads: { vaddr: number; offset: number; filesz: number }[] = [];
    let dynamic: { offset: number; size: number } | undefined;
    const ph = read(phoff, phentsize * phnum);
    for (let i = 0; i < phnum; i++) {
      const o = i * phentsize;
      const type = ph.readUInt32LE(o);
      const offset = Number(ph.readBigUInt64LE(o + 8));
      const vaddr = Number(ph.readBigUInt64LE(o + 16));
      const filesz = Number(ph.readBigUInt64LE(o + 32));
      if (type === 1) loads.push({ vaddr, offset, filesz }); // PT_LOAD
      if (type === 2) dynamic = { offset, size: filesz }; // PT_DYNAMIC
    }
    if (dynamic === undefined) return { needed: [], runpath: [] };
    const dyn = read(dynamic.offset, dynamic.size);
    const neededAt: number[] = [];
    const runpathAt: number[] = [];
    let strtab: number | undefined;
    for (let o = 0; o + 16 <= dyn.length; o += 16) {
      const tag = Number(dyn.readBigInt64LE(o));
      const val = Number(dyn.readBigUInt64LE(o + 8));
      if (tag === 0) break; // DT_NULL
      if (tag === 1) neededAt.push(val); // DT_NEEDED
      if (tag === 5) strtab = val; // DT_STRTAB (a virtual address)
      if (tag === 15 || tag === 29) runpathAt.push(val); // DT_RPATH, DT_RUNPATH
    }
    if (strtab === undefined) throw new Error(`${file}: dynamic section without a string table`);
    const seg = loads.find((l) => strtab! >= l.vaddr && strtab! < l.vaddr + l.filesz);
    if (seg === undefined) throw new Error(`${file}: string table outside the loaded segments`);
    const strtabOffset = strtab - seg.vaddr + seg.offset;
    const str = (at: number): string => {
      const b = read(strtabOffset + at, 4096);
      const end = b.indexOf(0);
      return b.subarray(0, end < 0 ? b.length : end).toString('utf8');
    };
    return { needed: neededAt.map(str), runpath: runpathAt.flatMap((at) => str(at).split(':')).filter((d) => d !== '') };
  } finally {
    closeSync(fd);
  }
}

export interface GpuProbe {
  found: boolean;
  /** What was looked at and what it said, for the device reason. */
  evidence: string;
}

/** Is there an NVIDIA GPU that answers? Cheap checks first, nvidia-smi last. */
export function probeNvidiaGpu(): GpuProbe {
  const procDir = '/proc/driver/nvidia/gpus';
  try {
    const gpus = readdirSync(procDir);
    if (gpus.length > 0) return { found: true, evidence: `${procDir} lists ${gpus.length} GPU(s)` };
  } catch {
    // no NVIDIA kernel driver (or not Linux); try the tool
  }
  try {
    const out = execFileSync('nvidia-smi', ['-L'], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] });
    const n = out.split('\n').filter((l) => l.startsWith('GPU ')).length;
    if (n > 0) return { found: true, evidence: `nvidia-smi -L lists ${n} GPU(s)` };
    return { found: false, evidence: 'nvidia-smi -L lists no GPU' };
  } catch {
    return { found: false, evidence: `no ${procDir} and no working nvidia-smi` };
  }
}

/** The sentence a user needs to get the CUDA EP libraries in place. */
export function cudaInstallHint(dir: string): string {
  const pkgDir = join(dir, '..', '..', '..', '..'); // <pkg>/bin/napi-v6/<platform>/<arch>
  const files = CUDA_PROVIDER_FILES.join(' and ');
  return [
    `To enable CUDA, put ${files} built for onnxruntime 1.29.0 into ${dir}. Either:`,
    `(1) CUDA 12: run onnxruntime-node's own installer with the CUDA flag:` +
      ` \`node ${join(pkgDir, 'script', 'install.js')} --onnxruntime-node-install=cuda12\`` +
      ` (npm users: \`npm install onnxruntime-node@1.29.0 --onnxruntime-node-install=cuda12\`;` +
      ` pnpm 10 skips install scripts unless onnxruntime-node is in "onlyBuiltDependencies");`,
    `(2) CUDA 13: \`npm pack com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9\`, unpack it and copy its ${files} into that directory` +
      ' (in the vlmkit repository: `pnpm cuda:install`).',
    'Either way the CUDA runtime, cuBLAS, cuRAND and cuDNN 9 of that CUDA major version must be on the loader path' +
      ' (LD_LIBRARY_PATH or ldconfig) when Node starts, e.g. from pip: nvidia-cuda-runtime, nvidia-cublas, nvidia-curand, nvidia-cudnn-cu13.',
  ].join(' ');
}

export interface DeviceChoice {
  device: Device;
  reason: string;
}

export interface DeviceFacts {
  binaries: CudaBinaries;
  /** Only consulted when the binaries are present. */
  gpu: () => GpuProbe;
}

/**
 * Decide the device from what is installed and what answers. Returns
 * `{ device: 'cuda' }` only as a plan: the caller still tries to create the
 * session on CUDA, and for 'auto' falls back to CPU if ORT refuses.
 * For an explicit 'cuda' that cannot work, returns `unavailable` with why.
 */
export function chooseDevice(request: DeviceRequest, facts: DeviceFacts): DeviceChoice & { unavailable?: string } {
  if (request === 'cpu') return { device: 'cpu', reason: 'cpu requested' };
  const { binaries } = facts;
  if (!binaries.present) {
    const why = `CUDA EP binaries not found in ${binaries.dir} (missing ${binaries.missing.join(', ')})`;
    if (request === 'cuda') return { device: 'cpu', reason: why, unavailable: why };
    return { device: 'cpu', reason: `auto: ${why}` };
  }
  const libs = binaries.missingLibraries ?? [];
  if (libs.length > 0) {
    const list = libs.map((l) => `${l.name} (${l.role}, needed by ${l.neededBy})`).join(', ');
    const why = `CUDA EP binaries in ${binaries.dir} but the loader finds no ${list} on LD_LIBRARY_PATH or in ldconfig's cache`;
    if (request === 'cuda') return { device: 'cpu', reason: why, unavailable: why };
    return { device: 'cpu', reason: `auto: ${why}` };
  }
  const gpu = facts.gpu();
  if (!gpu.found) {
    const why = `CUDA EP binaries present but no GPU answered (${gpu.evidence})`;
    if (request === 'cuda') return { device: 'cpu', reason: why, unavailable: why };
    return { device: 'cpu', reason: `auto: ${why}` };
  }
  const why = `CUDA EP binaries in ${binaries.dir}, ${gpu.evidence}`;
  return { device: 'cuda', reason: request === 'auto' ? `auto: ${why}` : `cuda requested; ${why}` };
}

/** Heuristic: does an ORT session-creation error come from the CUDA EP rather than the model? */
export function isCudaProviderFailure(message: string): boolean {
  return /AppendExecutionProvider_Cuda|providers_(cuda|shared)|libcud|libcublas|CUDA|cuDNN/i.test(message);
}
