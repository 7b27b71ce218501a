// The CUDA EP's files and libraries, and the GPU, as Node finds them on this machine (device.ts decides).
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  CUDA_EP_DLOPENED,
  CUDA_LIBRARY_ROLES,
  CUDA_PROVIDER_FILES,
  type CudaBinaries,
  type ElfDynamic,
  type GpuProbe,
  type LibraryLookup,
  type MissingLibrary,
} from './device.js';

/** Where onnxruntime-node keeps its native binding and looks for provider libraries. */
export function ortBindingDir(): string {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('onnxruntime-node'); // .../onnxruntime-node/dist/index.js
  return join(dirname(entry), '..', 'bin', 'napi-v6', process.platform, process.arch);
}

export function findCudaBinaries(dir: string = ortBindingDir(), lookup?: LibraryLookup): CudaBinaries {
  const missing = CUDA_PROVIDER_FILES.filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0) return { dir, present: false, missing };
  return { dir, present: true, missing, missingLibraries: missingCudaLibraries(dir, lookup ?? systemLibraryLookup()) };
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
