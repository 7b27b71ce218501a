/**
 * The published config of the real checkpoint, as MODEL_NOTES.md records it: it sizes the graphs that tests
 * build without weights and the shapes in docs/parameter-names.md.
 */

// granite-4.0-3b-vision: MODEL_NOTES.md (text model_type granitemoehybrid, every layer attention).
export const granite3b = {
  model_type: 'granite4_vision',
  image_token_index: 100352,
  downsample_rate: '4/8',
  deepstack_layer_map: [
    [-19, 9],
    [-13, 6],
    [-7, 3],
    [-1, 0],
  ],
  spatial_target_layers: [12, 15, 18, 21],
  spatial_vision_layer: -1,
  use_spatial_sampling: true,
  use_image_newline_parameter: true,
  vision_feature_select_strategy: 'full',
  image_grid_pinpoints: [
    [384, 768],
    [768, 384],
    [768, 768],
    [384, 1152],
    [1152, 384],
    [1152, 1152],
  ],
  vision_config: {
    model_type: 'siglip_vision_model',
    num_hidden_layers: 27,
    hidden_size: 1152,
    intermediate_size: 4304,
    num_attention_heads: 16,
    image_size: 384,
    patch_size: 16,
    hidden_act: 'gelu_pytorch_tanh',
    layer_norm_eps: 1e-6,
  },
  text_config: {
    model_type: 'granitemoehybrid',
    hidden_size: 2560,
    shared_intermediate_size: 8192,
    intermediate_size: 8192,
    num_hidden_layers: 40,
    num_attention_heads: 40,
    num_key_value_heads: 8,
    vocab_size: 100353,
    embedding_multiplier: 12,
    attention_multiplier: 0.015625,
    residual_multiplier: 0.22,
    logits_scaling: 10,
    rope_theta: 1e7,
    rms_norm_eps: 1e-5,
    tie_word_embeddings: true,
    layer_types: Array.from({ length: 40 }, () => 'attention'),
    num_local_experts: 0,
  },
  tie_word_embeddings: true,
};
