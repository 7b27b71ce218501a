/**
 * What a model load is doing, for progress bars: reading the checkpoint's headers and mapping its
 * weights (`weights`), then per session: building its graph, or finding and verifying it in the
 * graph cache (`build`), and creating its ORT session (`session`). On a real checkpoint the last
 * two take long (writing or hashing gigabytes of weights, ORT's graph optimizations).
 */
export type LoadStage = 'weights' | 'build' | 'session';

export interface LoadProgress {
  stage: LoadStage;
  /** What the step works on: `checkpoint`, or the session's name (`ernie-vision`, `granite-decoder`, ...). */
  name: string;
  /** Steps finished so far, out of `total` steps of this load. A step reports once when it starts and once when it ends. */
  done: number;
  total: number;
}

export type OnLoadProgress = (p: LoadProgress) => void;

/** Counts a load's steps (weights, then build and session per session) and reports each one's start and end. */
export class LoadSteps {
  private done = 0;
  private readonly total: number;

  constructor(
    sessions: number,
    private readonly onProgress: OnLoadProgress | undefined,
  ) {
    this.total = 1 + 2 * sessions;
  }

  private report(stage: LoadStage, name: string): void {
    this.onProgress?.({ stage, name, done: this.done, total: this.total });
  }

  /** The `weights` step. */
  async weights<T>(step: () => Promise<T>): Promise<T> {
    this.report('weights', 'checkpoint');
    const result = await step();
    this.done++;
    this.report('weights', 'checkpoint');
    return result;
  }

  /**
   * A session's `build` then `session` steps: `step` builds (or finds) the graph and calls
   * `onSession` when it starts creating the session (cachedSession's `onSession`).
   */
  async session<T>(name: string, step: (onSession: () => void) => Promise<T>): Promise<T> {
    let building = true;
    this.report('build', name);
    const result = await step(() => {
      building = false;
      this.done++;
      this.report('build', name);
      this.report('session', name);
    });
    // A step that never reported its session (a cache hit that opened nothing new) still counts both.
    this.done += building ? 2 : 1;
    this.report('session', name);
    return result;
  }
}
