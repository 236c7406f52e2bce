// The TypeScript side of native/napi/came_search_bindings.cc: CAME's search stage in one call (native/kernels/
// came_search.h; lib/methods/came/stage.ts builds the plan).
import { coreAddon, type MaybeAsync, type NativeTensorHandle } from '../native.js';

/** What cameSearch gives back: every expert's lists, the fused lists and the stage's laps. */
export interface CameSearchResultArg {
  expertIds: NativeTensorHandle;
  expertScores: NativeTensorHandle;
  expertCounts: NativeTensorHandle;
  ids: NativeTensorHandle;
  counts: NativeTensorHandle;
  scores: Float64Array;
  ms: number[];
}

/** came_search_bindings.cc's function (the plan is documented there and built by lib/methods/came/stage.ts). */
export interface CameSearchBindings {
  cameSearch(plan: object, async: boolean): MaybeAsync<CameSearchResultArg>;
}

/** came_search_bindings.cc's function in quorum_core.node. */
export function cameSearchBindings(): CameSearchBindings {
  return coreAddon() as CameSearchBindings;
}
