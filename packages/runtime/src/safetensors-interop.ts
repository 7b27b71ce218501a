/**
 * HostTensor <-> safetensors Tensor. Every safetensors dtype maps one to one
 * onto a HostTensor dtype except BF16: onnxruntime-node cannot take bf16 as a
 * graph input or output ("Unsupported data type: 16"), so BF16 becomes
 * float32, converted exactly (`bf16ToF32` from @vlmkit/safetensors). Data is
 * shared, not copied, except for BF16.
 */
import { bf16ToF32, DTYPE_OF, ELEMENT_TYPE, type Tensor } from '@vlmkit/safetensors';
import { RuntimeError } from './errors.js';
import { type HostDataTypes, type HostTensor, hostTensor, isHostDType } from './tensor.js';

/** A safetensors tensor as a HostTensor (BF16 -> float32, exact; all others keep their type). */
export function fromSafetensors(t: Tensor): HostTensor {
  if (t.dtype === 'BF16') {
    if (!(t.data instanceof Uint16Array)) {
      throw new RuntimeError('INVALID_TENSOR', `A BF16 safetensors tensor needs Uint16Array bits, got ${t.data.constructor.name}.`);
    }
    return hostTensor('float32', bf16ToF32(t.data), t.shape);
  }
  const dtype = ELEMENT_TYPE[t.dtype];
  if (!isHostDType(dtype)) {
    throw new RuntimeError('UNSUPPORTED_DTYPE', `Safetensors dtype '${String(t.dtype)}' has no HostTensor form.`);
  }
  return hostTensor(dtype, t.data as HostDataTypes[typeof dtype], t.shape);
}

/** A HostTensor as a safetensors tensor (float16 -> F16 bits, bool -> BOOL bytes, ...). */
export function toSafetensors(t: HostTensor): Tensor {
  return { dtype: DTYPE_OF[t.dtype], shape: [...t.dims], data: t.data };
}
