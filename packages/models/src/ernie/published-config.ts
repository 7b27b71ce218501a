/**
 * The published config of the real checkpoint, as MODEL_NOTES.md records it: it sizes the graphs that tests
 * build without weights and the shapes in docs/parameter-names.md.
 */

// ERNIE-4.5-VL-28B-A3B, hub (Baidu) layout: MODEL_NOTES.md.
export const ernie28b = {
  model_type: 'ernie4_5_moe_vl',
  hidden_size: 2560,
  intermediate_size: 12288,
  num_hidden_layers: 28,
  num_attention_heads: 20,
  num_key_value_heads: 4,
  vocab_size: 103424,
  rms_norm_eps: 1e-5,
  rope_theta: 500000,
  freq_allocation: 20,
  tie_word_embeddings: true,
  use_bias: false,
  hidden_act: 'silu',
  moe_num_experts: [64, 64],
  moe_intermediate_size: [1536, 512],
  moe_k: 6,
  moe_num_shared_experts: 2,
  moe_layer_start_index: [1, 1],
  moe_layer_end_index: [29, 28],
  moe_layer_interval: 1,
  pixel_hidden_size: 1280,
  spatial_conv_size: 2,
  temporal_conv_size: 2,
  use_temporal_conv: true,
  im_patch_id: 100295,
  image_start_token_id: 101304,
  image_end_token_id: 101305,
  video_start_token_id: 101306,
  video_end_token_id: 101307,
  vision_config: {
    depth: 32,
    embed_dim: 1280,
    hidden_size: 1280,
    hidden_act: 'quick_gelu',
    in_channels: 3,
    mlp_ratio: 4,
    num_heads: 16,
    patch_size: 14,
    spatial_merge_size: 2,
  },
};
