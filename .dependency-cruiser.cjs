// The layers of lib/ (docs/building.md draws them): every import points down or sideways, never up, and nothing
// forms a cycle. `npm run check:layers` (in .ci/run) fails on a violation.
//   core       tensors, kernels, indexes, text, io and file formats
//   retrieval  fusion, hybrid, evaluation, trained models (inference), the methods' search paths
//   training   the training loops, the methods' training
//   tools      CLI, report, data builders
// The public entry points (lib/index.ts, lib/entries/) sit beside the layers: they re-export, and nothing in lib/
// imports them.
const { core, training, tools, entries, retrieval, serving, libtorchSide, entryPoints } = require('./scripts/layers.cjs');

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'a cycle between modules', from: { path: '^lib/' }, to: { circular: true } },
    {
      name: 'core-is-the-bottom',
      severity: 'error',
      comment: 'core imports only core',
      from: { path: core },
      to: { path: '^lib/', pathNot: core },
    },
    {
      name: 'retrieval-below-training',
      severity: 'error',
      comment: 'retrieval imports core and retrieval only',
      from: { path: retrieval, pathNot: [training, tools] },
      to: { path: [training, tools, entries] },
    },
    {
      name: 'training-below-tools',
      severity: 'error',
      comment: 'training imports core, retrieval and training only',
      from: { path: training },
      to: { path: [tools, entries] },
    },
    {
      name: 'tools-below-entries',
      severity: 'error',
      comment: 'nothing in lib imports a public entry point',
      from: { path: tools },
      to: { path: entries },
    },
    {
      name: 'generic-code-knows-no-method',
      severity: 'error',
      comment: 'only a method itself, the tools and the entry points name a method',
      from: { path: '^lib/', pathNot: ['^lib/methods/', tools, entries] },
      to: { path: '^lib/methods/' },
    },
    {
      name: 'methods-are-independent',
      severity: 'error',
      comment: 'one method does not import another',
      from: { path: '^lib/methods/([^/]+)/' },
      to: { path: '^lib/methods/', pathNot: '^lib/methods/$1/' },
    },
    {
      name: 'server-surface',
      severity: 'error',
      comment: 'the root export (for servers) reaches no training or tools code',
      from: { path: '^lib/index[.]ts$' },
      to: { path: [training, tools] },
    },
    {
      name: 'serving-apart-from-the-lab',
      severity: 'error',
      comment: 'a serving class reaches no training, tools, libtorch-model, process-group or lab module through any chain of imports',
      from: { path: serving },
      to: { path: [training, tools, libtorchSide], reachable: true },
    },
    {
      name: 'reached-from-an-entry',
      severity: 'error',
      comment: 'every lib/ module is reached from a package entry point or the CLI (else it belongs in bench/, scripts/ or test/)',
      from: { path: entryPoints },
      to: { path: '^lib/', pathNot: entryPoints, reachable: false },
    },
    {
      name: 'product-only',
      severity: 'error',
      comment: 'the library does not import tests, benchmarks or scripts',
      from: { path: '^lib/' },
      to: { path: '^(test|bench|scripts)/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      from: { path: '^lib/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
