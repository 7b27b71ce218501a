import { describe, expect, it } from 'vitest';
import { main } from './main.js';

describe('vlmkit demo', () => {
  it('builds and runs the demo graph, printing the device and a layer-normed output', async () => {
    let text = '';
    const code = await main(['demo'], (s) => {
      text += s;
    });
    expect(code).toBe(0);
    expect(text).toMatch(/^device: cpu \(/);
    const values = /output: \[(.*)\]/.exec(text)![1]!.split(', ').map(Number);
    expect(values).toHaveLength(8);
    // Layer norm with unit weight and zero bias: zero mean, unit variance per row.
    const mean = values.reduce((a, b) => a + b) / 8;
    const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / 8;
    expect(Math.abs(mean)).toBeLessThan(1e-3);
    expect(variance).toBeGreaterThan(0.99);
  });

  it('rejects an unknown command with exit code 2', async () => {
    let text = '';
    expect(await main(['nope'], (s) => (text += s))).toBe(2);
    expect(text).toContain("unknown command 'nope'");
  });
});
