import type { Graph, Value } from '@vlmkit/onnx-graph';
import { VisionTowerError } from './errors.js';

/** The HF `hidden_act` names the vision towers use. */
export type VisionActivation = 'quick_gelu' | 'gelu' | 'gelu_pytorch_tanh' | 'silu';

export const VISION_ACTIVATIONS: readonly VisionActivation[] = ['quick_gelu', 'gelu', 'gelu_pytorch_tanh', 'silu'];

export function checkActivation(act: unknown, where: string): VisionActivation {
  if (typeof act === 'string' && (VISION_ACTIVATIONS as readonly string[]).includes(act)) return act as VisionActivation;
  throw new VisionTowerError(
    'UNSUPPORTED_ACTIVATION',
    `${where}: hidden_act ${JSON.stringify(act)} is not supported; expected one of ${VISION_ACTIVATIONS.join(', ')}.`,
  );
}

/** transformers ACT2FN, as graph ops. */
export function activation(g: Graph, x: Value, act: VisionActivation): Value {
  switch (act) {
    case 'quick_gelu':
      return g.quickGelu(x);
    case 'gelu':
      return g.gelu(x, 'none');
    case 'gelu_pytorch_tanh':
      return g.gelu(x, 'tanh');
    case 'silu':
      return g.silu(x);
  }
}
