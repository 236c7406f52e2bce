// quorum_torch_test.node (native/test/torch_test_hooks.cc): test-only hooks of the libtorch training pieces, built
// in a source checkout and never shipped. The kernel-backed autograd functions run through Quorum's kernels or
// through libtorch's own ops (reference), so the two can be compared value for value and gradient for gradient.
import { loadAddon, torchAddon } from '../lib/native.js';

export interface TorchTestAddon {
  /** The Retriever's in-batch contrastive loss and its gradients by libtorch's autograd. */
  contrastiveLoss(
    q: Float32Array,
    p: Float32Array,
    rows: number,
    passages: number,
    dim: number,
    positives: Int32Array,
    ignore: Int32Array | null,
  ): { loss: number; dQ: Float32Array; dP: Float32Array };
  /** One forward + backward of MaxSim through the kernels' autograd function, or (reference) libtorch's own ops. */
  maxSimAutograd(
    q: Float32Array,
    qMask: Int32Array,
    d: Float32Array,
    dLengths: Int32Array,
    grad: Float32Array,
    B: number,
    Lq: number,
    N: number,
    Ld: number,
    dim: number,
    reference: boolean,
  ): { scores: Float32Array; dQ: Float32Array; dD: Float32Array };
  /** The same for SPLADE pooling. */
  spladePoolAutograd(logits: Float32Array, mask: Int32Array, grad: Float32Array, B: number, T: number, V: number, reference: boolean): { w: Float32Array; dLogits: Float32Array };
  /** SPLADE pooling fused with its MLM decoder (logits = h emb^T + bias), through the kernels or libtorch's ops. */
  spladeDecoderAutograd(
    h: Float32Array,
    mask: Int32Array,
    emb: Float32Array,
    bias: Float32Array,
    grad: Float32Array,
    B: number,
    T: number,
    V: number,
    dim: number,
    reference: boolean,
  ): { w: Float32Array; dH: Float32Array; dEmb: Float32Array; dBias: Float32Array };
  /** CAME's batch loss (standardized, or with the competitive weights) and its gradient. */
  cameLoss(scores: Float32Array, E: number, B: number, P: number, positives: Int32Array, tau: number, competitive: boolean): { loss: number; weights: Float32Array; dScores: Float32Array };
}

let hooks: TorchTestAddon | undefined;

/** The test hooks module, loaded on first use (after quorum_torch, which sets libtorch's threads for the process). */
export function torchTestAddon(): TorchTestAddon {
  if (!hooks) {
    torchAddon();
    hooks = loadAddon<TorchTestAddon>('quorum_torch_test', 'QUORUM_TORCH_TEST_PATH');
  }
  return hooks;
}
