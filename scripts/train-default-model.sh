#!/usr/bin/env bash
# Trains the dense model shipped in the package (data/models/default): a Siamese encoder with no Transformer layer
# (GloVe token embeddings over BERT's WordPiece vocabulary plus the corpus's whole words, IDF-initialised token
# weights, corpus centring, unit vectors), trained on the covid and selqa train split of data/multidomain-mini
# (both Apache-2.0), passages read up to 512 tokens (SelQA's are long Wikipedia sections), best epoch by dev MRR,
# weights stored as q8 (int8 embedding rows with an f32 scale each: 4.5 MB instead of bf16's 8.6). About a minute
# on two cores.
#   bash scripts/train-default-model.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=data/models/default
node --import tsx lib/cli/main.ts train --data data/multidomain-mini --tasks covid,selqa --preset siamese \
  --layers 0 --epochs 3 --max-passage-length 512 --dtype q8 --out "$out"
# The optimizer checkpoints are for --resume, not for shipping.
rm -rf "$out/checkpoints"
du -sh "$out"
