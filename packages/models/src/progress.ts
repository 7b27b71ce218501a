/**
 * What a model load is doing, for progress bars: reading the checkpoint's headers and mapping its
 * weights (`weights`), then per session graph (`graph`: building it, or finding it in the cache,
 * and creating its ORT session; on a real checkpoint these are the steps that take long).
 */
export type LoadStage = 'weights' | 'graph';

export interface LoadProgress {
  stage: LoadStage;
  /** What the step works on: `checkpoint`, or the session's name (`ernie-vision`, `granite-decoder`, ...). */
  name: string;
  /** Steps finished so far, out of `total` steps of this load. A step reports once when it starts and once when it ends. */
  done: number;
  total: number;
}

export type OnLoadProgress = (p: LoadProgress) => void;

/** Counts a load's steps and reports each one's start and end to `onProgress`. */
export class LoadSteps {
  private done = 0;

  constructor(
    private readonly total: number,
    private readonly onProgress: OnLoadProgress | undefined,
  ) {}

  async run<T>(stage: LoadStage, name: string, step: () => Promise<T>): Promise<T> {
    this.onProgress?.({ stage, name, done: this.done, total: this.total });
    const result = await step();
    this.done++;
    this.onProgress?.({ stage, name, done: this.done, total: this.total });
    return result;
  }
}
