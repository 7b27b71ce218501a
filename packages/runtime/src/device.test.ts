import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CUDA_PROVIDER_FILES,
  type CudaBinaries,
  chooseDevice,
  cudaInstallHint,
  findCudaBinaries,
  type GpuProbe,
  isCudaProviderFailure,
  ortBindingDir,
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
    expect(findCudaBinaries(tmp)).toEqual({ dir: tmp, present: true, missing: [] });
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
