// The layers of lib/ as path patterns, read by the layer check (.dependency-cruiser.cjs) and by the check of the
// serving classes' import closure in the built package (scripts/check-serving.mjs), so that both name the same
// modules. docs/building.md draws the layers.
const core =
  '^lib/((errors|brand|dtype|shape|validate|native|native-resource|runtime|cuda|tensor|operand|random|progress|grid-search|search-result|dense|dense-index|sparse-index|maxsim|splade|losses|uncertainty|filter|batcher|live|search-request|quantized)[.]ts$|(io|text|bm25|data|bindings)/)';
const training = '^lib/(train/|methods/(came|muf)/train[.]ts$|methods/rom/(train|schedule|refresh|reader-data)[.]ts$)';
const tools = '^lib/(cli/|report/|builders/|methods/[^/]+/cli[.]ts$)';
const entries = '^lib/(index[.]ts$|entries/)';
const retrieval = '^lib/(fusion/|eval/|encoders/|models/|hybrid[.]ts$|methods/)';
// The serving classes (a server's imports) and what none of them may reach, directly or through any chain of imports:
// the training and tools layers, the libtorch models and process groups, and the lab classes that hold them.
const serving = '^lib/(methods/(muf|came|rom)/serve[.]ts|models/serving-encoder[.]ts)$';
const libtorchSide =
  '^lib/(models/(retriever|parameter-table|process-group)[.]ts|methods/muf/(ensemble|retriever)[.]ts|methods/came/(model|retriever)[.]ts|methods/rom/(model|network)[.]ts)$';
// What a user can reach: the package's entry points and the CLI.
const entryPoints = '^lib/(index[.]ts|entries/.+[.]ts|cli/main[.]ts)$';

module.exports = { core, training, tools, entries, retrieval, serving, libtorchSide, entryPoints };
