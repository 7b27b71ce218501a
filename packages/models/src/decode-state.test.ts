import { describe, expect, it } from 'vitest';
import { GrowingMask, SlotMask } from './decode-state.js';

const rows = (t: { data: ArrayLike<bigint | number>; dims: readonly number[] }) => {
  const [B, W] = t.dims as [number, number];
  return Array.from({ length: B }, (_, b) =>
    Array.from(t.data)
      .slice(b * W, (b + 1) * W)
      .map(Number),
  );
};

describe('SlotMask', () => {
  it("marks the prompt's slots (padding kept), one more per step, free slots 0, the new token 1", () => {
    // Row 1 left padded by 2; 3 prompt positions, capacity 5.
    const m = new SlotMask([1, 1, 1, 0, 0, 1], 2, 3, 5);
    expect(rows(m.next())).toEqual([
      [1, 1, 1, 0, 0, 1],
      [0, 0, 1, 0, 0, 1],
    ]);
    expect(rows(m.next())).toEqual([
      [1, 1, 1, 1, 0, 1],
      [0, 0, 1, 1, 0, 1],
    ]);
    // Grown to 7 slots: the same slots, more free ones.
    m.reserve(7);
    expect(rows(m.next())).toEqual([
      [1, 1, 1, 1, 1, 0, 0, 1],
      [0, 0, 1, 1, 1, 0, 0, 1],
    ]);
    m.next();
    m.next();
    expect(() => m.next()).toThrow(/all 7 slots are used/);
  });

  it('matches GrowingMask on the used slots', () => {
    const prompt = [0, 1, 1, 1, 1, 1];
    const slots = new SlotMask(prompt, 2, 3, 6);
    const growing = new GrowingMask(prompt, 2, 3);
    for (let n = 0; n < 4; n++) {
      const s = rows(slots.next());
      const g = rows(growing.next());
      for (let b = 0; b < 2; b++) {
        const used = g[b]!.length - 1;
        expect(s[b]!.slice(0, used)).toEqual(g[b]!.slice(0, used));
        expect(s[b]!.slice(used, -1).every((v) => v === 0)).toBe(true);
        expect(s[b]!.at(-1)).toBe(1);
      }
    }
  });
});
