// The TypeScript side of native/napi/centroid_index_object.cc: a centroid-coded token index (CAME's token index,
// lib/methods/came/token-index.ts), searched inside CAME's search stage.
import { coreAddon, type NativeTensorHandle } from '../native.js';

/** One native CentroidIndex object: the stage reads it; JavaScript only frees it. */
export interface NativeCentroidIndex {
  dispose(): void;
}

/** centroid_index_object.cc's constructor: centroids [c, dim] (unit rows), each token's centroid, tokens per passage. */
export interface CentroidIndexObjectBindings {
  CentroidIndex: new (centroids: NativeTensorHandle, codes: NativeTensorHandle, lengths: NativeTensorHandle) => NativeCentroidIndex;
}

/** centroid_index_object.cc's exports in quorum_core.node. */
export function centroidIndexObject(): CentroidIndexObjectBindings {
  return coreAddon() as CentroidIndexObjectBindings;
}
