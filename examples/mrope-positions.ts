// The M-RoPE utilities alone: 3D (t, h, w) position ids for an ERNIE-4.5-VL prompt holding an image and a
// video, and the positions of the tokens generated after it. Plain TypeScript, no model, no ONNX Runtime.
//   node examples/dist/mrope-positions.js
import { decodePositionIds, ERNIE_45_VL_TOKENS_HF, ernieRopeIndex } from '@vlmkit/mrope';

const tokens = ERNIE_45_VL_TOKENS_HF; // the token ids HF transformers 5.17's processor writes
const IMAGE_END = 101305;
const VIDEO_END = 101307;
// grid_thw in patches, as the processor returns them. The decoder sees each 2x2 window of patches as one
// token, and a video's frames in pairs: the image is 1*(4/2)*(6/2) = 6 tokens, the video (4/2)*(4/2)*(4/2) = 8.
const image: [number, number, number] = [1, 4, 6];
const video: [number, number, number] = [4, 4, 4];
const text = (n: number) => Array.from({ length: n }, (_, i) => 1000 + i); // any text token ids
const inputIds = [
  ...text(3),
  tokens.imageStartTokenId,
  ...new Array<number>(6).fill(tokens.imageTokenId),
  IMAGE_END,
  ...text(2),
  tokens.videoStartTokenId,
  ...new Array<number>(8).fill(tokens.videoTokenId),
  VIDEO_END,
  ...text(2),
];

// vLLM's rule by default; `{ videoTemporalAdvance: 'hf' }` follows HF 5.17 (they differ after a long video).
const pos = ernieRopeIndex({ inputIds, imageGridThw: [image], videoGridThw: [video] }, tokens);
const S = inputIds.length;
const axis = (a: number) => Array.from(pos.positionIds.slice(a * S, (a + 1) * S), Number);
const kind = (id: number) =>
  id === tokens.imageTokenId ? 'I' : id === tokens.videoTokenId ? 'V' : id >= 101304 && id <= 101307 ? '|' : 't';

console.log(`prompt of ${S} tokens (t text, | start/end, I image, V video), position_ids [${pos.shape.join(', ')}]:`);
console.log(`kind ${inputIds.map((id) => kind(id).padStart(2)).join(' ')}`);
for (const [a, name] of ['t', 'h', 'w'].entries())
  console.log(
    `${name}    ${axis(a)
      .map((p) => String(p).padStart(2))
      .join(' ')}`,
  );
console.log(`rope delta: ${pos.mropePositionDeltas[0]} (max position + 1 - prompt length)`);

// Generated tokens continue at (tokens so far) + delta, the same value on all three axes.
const next = decodePositionIds(pos.mropePositionDeltas, S, 3);
console.log(`next 3 tokens at: ${Array.from(next.positionIds.slice(0, 3), Number).join(', ')}`);
