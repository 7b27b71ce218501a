import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  cudaInstallHint,
  findCudaBinaries,
  findLibrary,
  missingCudaLibraries,
  ortBindingDir,
  readElfDynamic,
  systemLibraryLookup,
} from './cuda.node.js';
import {
  CUDA_PROVIDER_FILES,
  type CudaBinaries,
  chooseDevice,
  type GpuProbe,
  isCudaProviderFailure,
  type LibraryLookup,
} from './device.js';

const tmp = mkdtempSync(join(tmpdir(), 'vlmkit-device-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const absent: CudaBinaries = { dir: '/ort/bin', present: false, missing: [...CUDA_PROVIDER_FILES] };
const present: CudaBinaries = { dir: '/ort/bin', present: true, missing: [] };
const gpu: GpuProbe = { found: true, evidence: '/proc/driver/nvidia/gpus lists 1 GPU(s)' };
const noGpu: GpuProbe = { found: false, evidence: 'no /proc/driver/nvidia/gpus and no working nvidia-smi' };

describe('findCudaBinaries', () => {
  it('points at onnxruntime-node binding dir, which holds the binding', () => {
    const dir = ortBindingDir();
    expect(dir).toMatch(/onnxruntime-node[/\\]bin[/\\]napi-v6[/\\]/);
    expect(findCudaBinaries(dir).dir).toBe(dir);
  });

  it('lists the missing provider libraries', () => {
    expect(findCudaBinaries(tmp)).toEqual({ dir: tmp, present: false, missing: [...CUDA_PROVIDER_FILES] });
    writeFileSync(join(tmp, 'libonnxruntime_providers_shared.so'), '');
    expect(findCudaBinaries(tmp).missing).toEqual(['libonnxruntime_providers_cuda.so']);
    writeFileSync(join(tmp, 'libonnxruntime_providers_cuda.so'), '');
    // Present but empty: the EP files themselves are what the loader would miss.
    expect(findCudaBinaries(tmp)).toEqual({
      dir: tmp,
      present: true,
      missing: [],
      missingLibraries: CUDA_PROVIDER_FILES.map((f) => ({
        name: f,
        role: `the EP itself, unreadable: ${join(tmp, f)} is not an ELF file`,
        neededBy: 'onnxruntime',
      })),
    });
  });
});

describe('chooseDevice', () => {
  it('cpu is cpu, without probing', () => {
    expect(
      chooseDevice('cpu', {
        binaries: present,
        gpu: () => {
          throw new Error('probed');
        },
      }),
    ).toEqual({
      device: 'cpu',
      reason: 'cpu requested',
    });
  });

  it('auto without binaries: cpu, naming the directory and the files, without probing the GPU', () => {
    const c = chooseDevice('auto', {
      binaries: absent,
      gpu: () => {
        throw new Error('probed');
      },
    });
    expect(c.device).toBe('cpu');
    expect(c.unavailable).toBeUndefined();
    expect(c.reason).toBe(
      'auto: CUDA EP binaries not found in /ort/bin (missing libonnxruntime_providers_shared.so, libonnxruntime_providers_cuda.so)',
    );
  });

  it('auto with binaries but no GPU: cpu, with the probe evidence', () => {
    const c = chooseDevice('auto', { binaries: present, gpu: () => noGpu });
    expect(c).toEqual({ device: 'cpu', reason: `auto: CUDA EP binaries present but no GPU answered (${noGpu.evidence})` });
  });

  it('auto with binaries and a GPU: cuda', () => {
    expect(chooseDevice('auto', { binaries: present, gpu: () => gpu })).toEqual({
      device: 'cuda',
      reason: `auto: CUDA EP binaries in /ort/bin, ${gpu.evidence}`,
    });
  });

  it('explicit cuda that cannot work is marked unavailable', () => {
    expect(chooseDevice('cuda', { binaries: absent, gpu: () => gpu }).unavailable).toMatch(/CUDA EP binaries not found/);
    expect(chooseDevice('cuda', { binaries: present, gpu: () => noGpu }).unavailable).toMatch(/no GPU answered/);
    expect(chooseDevice('cuda', { binaries: present, gpu: () => gpu })).toMatchObject({ device: 'cuda' });
  });
});

describe('cudaInstallHint', () => {
  it('gives both ways to install the EP libraries into the binding directory', () => {
    const dir = '/x/node_modules/onnxruntime-node/bin/napi-v6/linux/x64';
    const hint = cudaInstallHint(dir);
    expect(hint).toContain(`into ${dir}`);
    expect(hint).toContain('node /x/node_modules/onnxruntime-node/script/install.js --onnxruntime-node-install=cuda12');
    expect(hint).toContain('npm install onnxruntime-node@1.29.0 --onnxruntime-node-install=cuda12');
    expect(hint).toContain('com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9');
    for (const f of CUDA_PROVIDER_FILES) expect(hint).toContain(f);
  });
});

describe('isCudaProviderFailure', () => {
  it('tells EP failures from model failures', () => {
    expect(isCudaProviderFailure('OrtSessionOptionsAppendExecutionProvider_Cuda: Failed to load shared library')).toBe(true);
    expect(isCudaProviderFailure('libcudnn.so.9: cannot open shared object file')).toBe(true);
    expect(isCudaProviderFailure('Failed to load model because protobuf parsing failed.')).toBe(false);
  });
});

/**
 * A minimal 64-bit little-endian ELF shared library: one PT_LOAD mapping the file at 0x1000 (so the reader must
 * translate the string table's address), a PT_DYNAMIC with DT_NEEDED / DT_RUNPATH / DT_STRTAB, the string table.
 */
function fakeElf(needed: string[], runpath?: string): Buffer {
  const strings = ['', ...needed, ...(runpath === undefined ? [] : [runpath])];
  const strtab = Buffer.from(`${strings.join('\0')}\0`);
  const at = (i: number) => strings.slice(0, i).reduce((n, x) => n + x.length + 1, 0);
  const dynEntries: [number, number][] = needed.map((_, i) => [1, at(i + 1)]);
  if (runpath !== undefined) dynEntries.push([29, at(strings.length - 1)]);
  const dynOffset = 64 + 2 * 56;
  const strOffset = dynOffset + (dynEntries.length + 2) * 16;
  const vaddr = 0x1000;
  dynEntries.push([5, vaddr + strOffset], [0, 0]);
  const b = Buffer.alloc(strOffset + strtab.length);
  b.writeUInt32BE(0x7f454c46, 0);
  b[4] = 2; // ELFCLASS64
  b[5] = 1; // little endian
  b[6] = 1;
  b.writeUInt16LE(3, 0x10); // ET_DYN
  b.writeUInt16LE(62, 0x12); // x86-64
  b.writeBigUInt64LE(64n, 0x20); // e_phoff
  b.writeUInt16LE(56, 0x36);
  b.writeUInt16LE(2, 0x38);
  const ph = (i: number, type: number, offset: number, size: number, va: number) => {
    const o = 64 + i * 56;
    b.writeUInt32LE(type, o);
    b.writeBigUInt64LE(BigInt(offset), o + 8);
    b.writeBigUInt64LE(BigInt(va), o + 16);
    b.writeBigUInt64LE(BigInt(size), o + 32);
  };
  ph(0, 1, 0, b.length, vaddr);
  ph(1, 2, dynOffset, strOffset - dynOffset, vaddr + dynOffset);
  dynEntries.forEach(([tag, val], i) => {
    b.writeBigInt64LE(BigInt(tag), dynOffset + i * 16);
    b.writeBigUInt64LE(BigInt(val), dynOffset + i * 16 + 8);
  });
  strtab.copy(b, strOffset);
  return b;
}

/** A directory holding (empty) files of these names. */
function libDir(name: string, libs: string[]): string {
  const d = join(tmp, name);
  mkdirSync(d, { recursive: true });
  for (const l of libs) writeFileSync(join(d, l), '');
  return d;
}

const EP_NEEDED = ['libcublasLt.so.13', 'libcublas.so.13', 'libcurand.so.10', 'libcudart.so.13', 'libcuda.so.1', 'libstdc++.so.6'];

describe('readElfDynamic', () => {
  it('reads DT_NEEDED and DT_RUNPATH through the string table address', () => {
    const f = join(tmp, 'fake.so');
    writeFileSync(f, fakeElf(['libcudart.so.13', 'libc.so.6'], '$ORIGIN/../lib:/opt/x'));
    expect(readElfDynamic(f)).toEqual({ needed: ['libcudart.so.13', 'libc.so.6'], runpath: ['$ORIGIN/../lib', '/opt/x'] });
  });

  it("reads a real library: onnxruntime-node's libonnxruntime.so.1 needs libc", () => {
    const { needed } = readElfDynamic(join(ortBindingDir(), 'libonnxruntime.so.1'));
    expect(needed).toContain('libc.so.6');
    expect(needed).not.toContain('libcudart.so.13');
  });

  it('names a file that is not an ELF library', () => {
    const f = join(tmp, 'not-elf.so');
    writeFileSync(f, 'version https://git-lfs.github.com/spec/v1\n'.repeat(4));
    expect(() => readElfDynamic(f)).toThrow(`${f} is not an ELF file`);
  });
});

describe('the libraries the CUDA EP needs', () => {
  const ep = libDir('ep', []);
  writeFileSync(join(ep, 'libonnxruntime_providers_shared.so'), fakeElf(['libstdc++.so.6']));
  writeFileSync(join(ep, 'libonnxruntime_providers_cuda.so'), fakeElf(EP_NEEDED));
  const lookup = (ldLibraryPath: string[]): LibraryLookup => ({
    ldLibraryPath,
    cache: new Set(['libcuda.so.1']),
    defaultDirs: [libDir('system', ['libstdc++.so.6'])],
  });

  it('finds each in LD_LIBRARY_PATH, ldconfig cache or default dirs, and names the missing ones with what they are', () => {
    const partial = libDir('cuda-partial', ['libcudart.so.13', 'libcublasLt.so.13', 'libcurand.so.10']);
    expect(missingCudaLibraries(ep, lookup(['/nonexistent', partial]))).toEqual([
      { name: 'libcublas.so.13', role: 'cuBLAS', neededBy: 'libonnxruntime_providers_cuda.so' },
      { name: 'libcudnn.so.9', role: 'cuDNN', neededBy: 'libonnxruntime_providers_cuda.so' },
    ]);
    const cudnn = libDir('cudnn', ['libcudnn.so.9', 'libcublas.so.13']);
    expect(missingCudaLibraries(ep, lookup([partial, cudnn]))).toEqual([]);
    expect(missingCudaLibraries(ep, { ldLibraryPath: [], cache: new Set(), defaultDirs: [] }).map((l) => l.name)).toEqual([
      'libstdc++.so.6',
      ...EP_NEEDED.slice(0, 5),
      'libcudnn.so.9',
    ]);
  });

  it('follows $ORIGIN in RUNPATH', () => {
    const lib = libDir('pkg/lib', ['libcudart.so.13']);
    const empty: LibraryLookup = { ldLibraryPath: [], cache: new Set(), defaultDirs: [] };
    expect(findLibrary('libcudart.so.13', empty, ['$ORIGIN/../lib'], join(tmp, 'pkg', 'bin'))).toBe(join(lib, 'libcudart.so.13'));
    expect(findLibrary('libcudart.so.13', empty, [], join(tmp, 'pkg', 'bin'))).toBeUndefined();
  });

  it('findCudaBinaries checks them once the EP files are there', () => {
    const b = findCudaBinaries(ep, lookup([]));
    expect(b.present).toBe(true);
    expect(b.missingLibraries?.map((l) => l.name)).toEqual([
      'libcublasLt.so.13',
      'libcublas.so.13',
      'libcurand.so.10',
      'libcudart.so.13',
      'libcudnn.so.9',
    ]);
  });

  it('systemLibraryLookup reads LD_LIBRARY_PATH and ldconfig', () => {
    const l = systemLibraryLookup({ LD_LIBRARY_PATH: '/a::/b' });
    expect(l.ldLibraryPath).toEqual(['/a', '/b']);
    expect(l.cache.has('libc.so.6')).toBe(true);
  });

  it("explicit cuda is unavailable naming the missing library; auto says why it chose cpu; the GPU isn't probed", () => {
    const binaries: CudaBinaries = {
      ...present,
      missingLibraries: [{ name: 'libcudnn.so.9', role: 'cuDNN', neededBy: 'libonnxruntime_providers_cuda.so' }],
    };
    const facts = {
      binaries,
      gpu: (): GpuProbe => {
        throw new Error('probed');
      },
    };
    const why =
      "CUDA EP binaries in /ort/bin but the loader finds no libcudnn.so.9 (cuDNN, needed by libonnxruntime_providers_cuda.so) on LD_LIBRARY_PATH or in ldconfig's cache";
    expect(chooseDevice('cuda', facts)).toEqual({ device: 'cpu', reason: why, unavailable: why });
    expect(chooseDevice('auto', facts)).toEqual({ device: 'cpu', reason: `auto: ${why}` });
    expect(chooseDevice('auto', { binaries: { ...present, missingLibraries: [] }, gpu: () => gpu }).device).toBe('cuda');
  });
});
