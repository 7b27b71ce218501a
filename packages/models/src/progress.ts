/**
 * What a model load is doing, for progress bars: reading the checkpoint's headers and mapping its
 * weights (`weights`), then per session: building its graph, or finding and verifying it in the
 * graph cache (`build`), and creating its ORT session (`session`). On a real checkpoint the last
 * two take long (reading, converting or quantizing gigabytes of weights, ORT's graph optimizations).
 */
import { type FileRead, observeFileReads } from '@vlmkit/onnx-graph';
import type { Checkpoint, TensorRead } from '@vlmkit/safetensors';

export type LoadStage = 'weights' | 'build' | 'session';

/**
 * How far a step's work is, reported between its start and its end (`LoadProgress.detail`):
 * - `read`: tensors of one checkpoint file read for the graph (through the checkpoint for a fused or merged
 *   tensor, or by the build's save for one folded, quantized or copied): the bytes read from that file so far,
 *   out of the bytes its tensors hold (a tensor read twice counts twice). Each file's count only grows.
 * - `quantize`: a build that quantizes is reading the weights of layer `layer` (0-based) of `layers` in the
 *   stack `stack` (the checkpoint's name before the layer index: `model.layers`); reported each time its reads
 *   move to another layer (the build follows the graph, so it may come back: attention first, experts later).
 */
export type StepDetail =
  | { readonly kind: 'read'; readonly file: string; readonly bytes: number; readonly totalBytes: number }
  | { readonly kind: 'quantize'; readonly stack: string; readonly layer: number; readonly layers: number };

export interface LoadProgress {
  stage: LoadStage;
  /** What the step works on: `checkpoint`, or the session's name (`ernie-vision`, `granite-decoder`, ...). */
  name: string;
  /** Steps finished so far, out of `total` steps of this load. A step reports once when it starts and once when it ends. */
  done: number;
  total: number;
  /** Only on reports within a step (between its start and its end): how far its work is. */
  detail?: StepDetail | undefined;
}

export type OnLoadProgress = (p: LoadProgress) => void;

/** A tensor name's layer: the stack before its first numeric component and that number (`model.layers`, 3). */
function layerOf(name: string): { stack: string; layer: number } | undefined {
  const m = /^(.+?)\.(\d+)\./.exec(name);
  return m ? { stack: m[1]!, layer: Number(m[2]) } : undefined;
}

/**
 * Counts a load's steps (weights, then build and session per session) and reports each one's start and
 * end, and in between the reads of the checkpoint it `watch`es, attributed to the step in progress: those
 * through the checkpoint, and those of its files by a session step's save (onnx-graph `observeFileReads`).
 */
export class LoadSteps {
  private done = 0;
  private readonly total: number;
  private current: { stage: LoadStage; name: string; quantize: boolean } | undefined;
  /** Per file: bytes read so far, and what its tensors hold. */
  private readonly files = new Map<string, { read: number; total: number }>();
  /** Per stack: its layer count. */
  private readonly stacks = new Map<string, number>();
  /** Tensor names by where their data starts (`file:byteOffset`): the names of file reads. */
  private readonly names = new Map<string, string>();
  private lastLayer: string | undefined;

  constructor(
    sessions: number,
    private readonly onProgress: OnLoadProgress | undefined,
  ) {
    this.total = 1 + 2 * sessions;
  }

  private report(stage: LoadStage, name: string, detail?: StepDetail): void {
    this.onProgress?.({ stage, name, done: this.done, total: this.total, ...(detail ? { detail } : {}) });
  }

  private begin(stage: LoadStage, name: string, quantize = false): void {
    this.current = { stage, name, quantize };
    this.lastLayer = undefined;
    this.report(stage, name);
  }

  private end(stage: LoadStage, name: string): void {
    this.current = undefined;
    this.report(stage, name);
  }

  /** Reports `ckpt`'s tensor reads as `read` (and, in a quantizing build, `quantize`) details of the step in progress. */
  watch(ckpt: Checkpoint): Checkpoint {
    for (const name of ckpt.names()) {
      const { file, byteOffset, byteLength } = ckpt.info(name);
      this.names.set(`${file}:${byteOffset}`, name);
      const f = this.files.get(file) ?? { read: 0, total: 0 };
      this.files.set(file, { ...f, total: f.total + byteLength });
      const at = layerOf(name);
      if (at) this.stacks.set(at.stack, Math.max(this.stacks.get(at.stack) ?? 0, at.layer + 1));
    }
    ckpt.observeReads((r) => this.onRead(r));
    return ckpt;
  }

  private onFileRead(r: FileRead): void {
    this.onRead({ name: this.names.get(`${r.path}:${r.byteOffset}`) ?? '', file: r.path, bytes: r.byteLength });
  }

  private onRead(r: TensorRead): void {
    const step = this.current;
    const f = this.files.get(r.file);
    if (step === undefined || f === undefined || !this.onProgress) return;
    f.read += r.bytes;
    this.report(step.stage, step.name, { kind: 'read', file: r.file, bytes: f.read, totalBytes: f.total });
    const at = step.quantize && step.stage === 'build' ? layerOf(r.name) : undefined;
    if (at && `${at.stack}.${at.layer}` !== this.lastLayer) {
      this.lastLayer = `${at.stack}.${at.layer}`;
      this.report(step.stage, step.name, { kind: 'quantize', ...at, layers: this.stacks.get(at.stack)! });
    }
  }

  /** The `weights` step. */
  async weights<T>(step: () => Promise<T>): Promise<T> {
    this.begin('weights', 'checkpoint');
    const result = await step();
    this.done++;
    this.end('weights', 'checkpoint');
    return result;
  }

  /**
   * A session's `build` then `session` steps: `step` builds (or finds) the graph and calls
   * `onSession` when it starts creating the session (cachedSession's `onSession`). `options.quantize`:
   * the graph quantizes weights while it is built (its reads are reported per layer too).
   */
  async session<T>(name: string, options: { quantize?: boolean }, step: (onSession: () => void) => Promise<T>): Promise<T> {
    let building = true;
    this.begin('build', name, options.quantize === true);
    const result = await observeFileReads(
      (r) => this.onFileRead(r),
      () =>
        step(() => {
          building = false;
          this.done++;
          this.end('build', name);
          this.begin('session', name);
        }),
    );
    // A step that never reported its session (a cache hit that opened nothing new) still counts both.
    this.done += building ? 2 : 1;
    this.end('session', name);
    return result;
  }
}
