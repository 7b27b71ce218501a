import type { Graph, Value } from '@vlmkit/onnx-graph';

/** The HF `hidden_act` names the vision towers use. */
export type VisionActivation = 'quick_gelu' | 'gelu' | 'gelu_pytorch_tanh' | 'silu';

/** The `hidden_act` values the config readers accept (`ConfigObject.oneOf`): the ones `activation` builds. */
export const VISION_ACTIVATIONS: readonly VisionActivation[] = ['quick_gelu', 'gelu', 'gelu_pytorch_tanh', 'silu'];

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
