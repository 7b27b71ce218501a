import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXECUTION_PROVIDERS, formatOffProvider, formatPlacement, offProvider, opTypeCounts, parseNodePlacements } from './placement.js';
import { nodePlacement } from './placement.node.js';
import { affineModel } from './test-utils/onnx-models.js';

const tmp = mkdtempSync(join(tmpdir(), 'vlmkit-placement-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// Lines as ORT 1.29 prints them (session_state.cc VerifyEachNodeIsAssignedToAnEp): a time stamp, the
// severity/logger/source tag, then the message; node lines are indented by two spaces.
const prefix = (line: number) => `2026-11-30 00:41:06.190303978 [V:onnxruntime:, session_state.cc:${line} VerifyEachNodeIsAssignedToAnEp]`;
const splitLog = [
  '2026-11-30 00:41:06.100000000 [V:onnxruntime:, inference_session.cc:1 Initialize] Node placements (not this function)',
  `${prefix(1378)} Node placements`,
  `${prefix(1386)}  Node(s) placed on [CUDAExecutionProvider]. Number of nodes: 4`,
  `${prefix(1388)}   MatMul (decoder/layers.0/attn/q_proj/MatMul)`,
  `${prefix(1388)}   Softmax (decoder/layers.0/attn/softmax)`,
  `${prefix(1388)}   MemcpyToHost (Memcpy_token_3 (copy))`,
  `${prefix(1388)}   MemcpyFromHost ()`,
  '2026-11-30 00:41:06.190303978 [V:onnxruntime:, session_state.cc:186 CreateGraphInfo] SaveMLValueNameIndexMapping',
  `${prefix(1386)}  Node(s) placed on [CPUExecutionProvider]. Number of nodes: 3`,
  `${prefix(1388)}   Shape (decoder/shape)`,
  `${prefix(1388)}   Gather (decoder/gather_0)`,
  `${prefix(1388)}   Shape (decoder/shape_1)`,
].join('\n');

describe('parseNodePlacements', () => {
  it('reads a graph split over two providers, node by node', () => {
    const [p, ...rest] = parseNodePlacements(splitLog);
    expect(rest).toEqual([]);
    expect(p!.providers.map(({ provider, count }) => [provider, count])).toEqual([
      ['CUDAExecutionProvider', 4],
      ['CPUExecutionProvider', 3],
    ]);
    expect(p!.providers[0]!.nodes).toEqual([
      { opType: 'MatMul', name: 'decoder/layers.0/attn/q_proj/MatMul' },
      { opType: 'Softmax', name: 'decoder/layers.0/attn/softmax' },
      { opType: 'MemcpyToHost', name: 'Memcpy_token_3 (copy)' },
      { opType: 'MemcpyFromHost', name: '' },
    ]);
    expect(opTypeCounts(p!.providers[1]!.nodes)).toEqual([
      ['Shape', 2],
      ['Gather', 1],
    ]);
    expect(formatPlacement(p!)).toEqual([
      'CUDAExecutionProvider 4 nodes (MemcpyFromHost 1, MemcpyToHost 1)',
      'CPUExecutionProvider 3 nodes: Shape 2, Gather 1',
    ]);
  });

  it('reads the one-provider form, which lists no nodes', () => {
    const log = `${prefix(1378)} Node placements\n${prefix(1381)}  All nodes placed on [CPUExecutionProvider]. Number of nodes: 567\r\n`;
    expect(parseNodePlacements(log)).toEqual([{ providers: [{ provider: 'CPUExecutionProvider', count: 567, nodes: [] }] }]);
  });

  it('rejects a block whose node list does not match its count', () => {
    const log = splitLog.split('\n').slice(0, -1).join('\n');
    expect(() => parseNodePlacements(log)).toThrow('CPUExecutionProvider announces 3 nodes but lists 2');
  });

  it('finds nothing in a log without the block', () => {
    expect(parseNodePlacements('2026-11-30 [W:onnxruntime:, x.cc:1 F] warning\n')).toEqual([]);
  });
});

describe('nodePlacement', () => {
  it('asks ORT itself: the affine model on CPU, both nodes', async () => {
    const path = join(tmp, 'affine.onnx');
    writeFileSync(path, affineModel());
    const p = await nodePlacement(path, { device: 'cpu', graphOptimizationLevel: 'disabled' });
    expect(p).toEqual({ providers: [{ provider: 'CPUExecutionProvider', count: 2, nodes: [] }] });
    expect(formatPlacement(p)).toEqual(['CPUExecutionProvider 2 nodes']);
  });

  it('names the model when ORT cannot load it', async () => {
    const path = join(tmp, 'broken.onnx');
    writeFileSync(path, 'not a model');
    await expect(nodePlacement(path, { device: 'cpu' })).rejects.toThrow(`node placement of ${path} on cpu failed`);
  });
});

describe('offProvider', () => {
  it('lists every node not on the requested provider, by op type and name, and the inserted copies', () => {
    const [p] = parseNodePlacements(splitLog);
    expect(offProvider(p!, 'CUDAExecutionProvider').others.map((x) => x.provider)).toEqual(['CPUExecutionProvider']);
    expect(formatOffProvider(p!, EXECUTION_PROVIDERS.cuda)).toEqual([
      'CPUExecutionProvider Shape (decoder/shape)',
      'CPUExecutionProvider Gather (decoder/gather_0)',
      'CPUExecutionProvider Shape (decoder/shape_1)',
      'copy MemcpyToHost (Memcpy_token_3 (copy))',
      'copy MemcpyFromHost ()',
    ]);
    // Asked for CPU: the CUDA nodes are the ones off it.
    expect(formatOffProvider(p!, EXECUTION_PROVIDERS.cpu).slice(0, 2)).toEqual([
      'CUDAExecutionProvider MatMul (decoder/layers.0/attn/q_proj/MatMul)',
      'CUDAExecutionProvider Softmax (decoder/layers.0/attn/softmax)',
    ]);
  });

  it('a graph wholly on another provider is one line with its count; wholly on the requested one, none', () => {
    const log = `${prefix(1378)} Node placements\n${prefix(1381)}  All nodes placed on [CPUExecutionProvider]. Number of nodes: 567\n`;
    const [p] = parseNodePlacements(log);
    expect(formatOffProvider(p!, EXECUTION_PROVIDERS.cuda)).toEqual(['CPUExecutionProvider all 567 nodes']);
    expect(formatOffProvider(p!, EXECUTION_PROVIDERS.cpu)).toEqual([]);
  });
});
