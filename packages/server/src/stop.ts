// OpenAI's `stop`: the answer ends before the first stop string, which is not returned. A streamed piece
// may end with the start of a stop string, so that much text is held back until the next piece tells.

export class StopMatcher {
  #held = '';
  #stopped = false;

  constructor(readonly stops: readonly string[]) {}

  /** Whether a stop string has been seen (nothing more is returned after it). */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** The text of `piece` that can be sent now. */
  push(piece: string): string {
    if (this.#stopped) return '';
    const text = this.#held + piece;
    let cut = -1;
    for (const s of this.stops) {
      const at = text.indexOf(s);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      this.#stopped = true;
      this.#held = '';
      return text.slice(0, cut);
    }
    // Hold back the longest tail that begins some stop string.
    let keep = 0;
    for (const s of this.stops) {
      for (let n = Math.min(s.length - 1, text.length); n > keep; n--) {
        if (text.endsWith(s.slice(0, n))) {
          keep = n;
          break;
        }
      }
    }
    this.#held = text.slice(text.length - keep);
    return text.slice(0, text.length - keep);
  }

  /** The text still held back, once the answer has ended without a stop string. */
  flush(): string {
    const rest = this.#stopped ? '' : this.#held;
    this.#held = '';
    return rest;
  }
}
