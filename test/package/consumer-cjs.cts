// A CommonJS TypeScript consumer: type-checked against the package's require() declarations.
import quorum = require('quorum-retrieval');
import kernels = require('quorum-retrieval/kernels');

const corpus: quorum.Tensor<'f32'> = quorum.Tensor.from(new Float32Array([1, 0, 0, 1]), [2, 2]);
const top: quorum.TopKResult = quorum.scoreTopKSync(corpus, corpus, 1);
const code: string | undefined = top.rows > 0 ? new quorum.QuorumError('ERR_RANGE', 'x').code : undefined;
const mi: typeof kernels.ensembleMISync = kernels.ensembleMISync;
export = { top, code, mi };
