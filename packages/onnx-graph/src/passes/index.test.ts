import { describe, expect, it } from 'vitest';
import { GraphError } from '../errors.js';
import { APPEND_ATTENTION_PASSES, CONTRIB_PASSES, PASS_NAMES, PASSES, resolvePasses, WEBGPU_PASSES } from './index.js';

describe('PASSES: the passes a profile names', () => {
  it("each is registered under its own name, and the lists' passes are the registered ones", () => {
    for (const [name, pass] of Object.entries(PASSES)) expect(pass.name).toBe(name);
    expect(resolvePasses(CONTRIB_PASSES.map((p) => p.name))).toEqual(CONTRIB_PASSES);
    for (const p of [...CONTRIB_PASSES, ...APPEND_ATTENTION_PASSES, ...WEBGPU_PASSES]) expect(Object.values(PASSES)).toContain(p);
  });

  it('resolvePasses keeps the order given and refuses an unknown name, naming the known ones', () => {
    expect(resolvePasses(['append-attention', 'skip-rms-norm'])).toEqual([PASSES['append-attention'], PASSES['skip-rms-norm']]);
    let error: unknown;
    try {
      resolvePasses(['skip-rms-norm', 'contrib']);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(GraphError);
    expect(error).toMatchObject({ code: 'BAD_ARGUMENT' });
    expect((error as Error).message).toBe(`unknown pass 'contrib'; the passes are ${PASS_NAMES.join(', ')}`);
  });
});
