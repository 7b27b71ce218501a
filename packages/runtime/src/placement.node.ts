// nodePlacement: ORT's verbose placement log (placement.ts parses it) from a session created in a child Node
// process, where onnxruntime-node writes it to stderr.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { RuntimeError } from './errors.js';
import { type NodePlacement, type PlacementOptions, parseNodePlacements } from './placement.js';

// Runs in the child: create the session with verbose logging, release it, exit.
const CHILD = `
const ort = (await import(process.env.VLMKIT_ORT_URL)).default;
ort.env.logLevel = 'verbose';
const opts = JSON.parse(process.env.VLMKIT_PLACEMENT_OPTS);
const s = await ort.InferenceSession.create(process.env.VLMKIT_PLACEMENT_MODEL, opts);
await s.release();
`;

/**
 * Create a session for the `.onnx` file at `model` on `device` in a child
 * process with ORT's verbose log on, and return where ORT placed its nodes.
 * The child inherits this process's environment (LD_LIBRARY_PATH for CUDA).
 */
export async function nodePlacement(model: string, opts: PlacementOptions): Promise<NodePlacement> {
  const require = createRequire(import.meta.url);
  const sessionOptions = {
    executionProviders: opts.device === 'cuda' ? ['cuda', 'cpu'] : ['cpu'],
    logSeverityLevel: 0,
    logVerbosityLevel: 0,
    ...(opts.graphOptimizationLevel === undefined ? {} : { graphOptimizationLevel: opts.graphOptimizationLevel }),
  };
  const env = {
    ...process.env,
    VLMKIT_ORT_URL: pathToFileURL(require.resolve('onnxruntime-node')).href,
    VLMKIT_PLACEMENT_MODEL: model,
    VLMKIT_PLACEMENT_OPTS: JSON.stringify(sessionOptions),
  };
  const log = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', CHILD],
      { env, maxBuffer: 1 << 30, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const all = `${stdout}\n${stderr}`;
        if (error) {
          const tail = all.trim().split('\n').slice(-5).join('\n');
          reject(new RuntimeError('ORT_LOAD_FAILED', `node placement of ${model} on ${opts.device} failed: ${tail}`, { cause: error }));
        } else resolve(all);
      },
    );
  });
  const blocks = parseNodePlacements(log);
  if (blocks.length !== 1) {
    throw new RuntimeError(
      'ORT_LOAD_FAILED',
      `node placement of ${model}: expected one "Node placements" block in ORT's log, found ${blocks.length}`,
    );
  }
  return blocks[0]!;
}
