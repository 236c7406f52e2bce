// The 0-layer encoder's model object and "texts to embed" as arguments of core calls (embeddingBag, embedTexts, and
// mufSearch's questions given as texts): checked, their tensors pinned; the embedding runs in the call's task.
#pragma once
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "../kernels/embedding_bag.h"
#include "../text/wordpiece.h"

namespace quorum::napi {

// The model object (embedding_bag_bindings.cc lists its keys), checked; its tensors pinned.
kernels::EmbeddingBagModel embedding_bag_model_arg(Napi::Env env, const Napi::Value& v, std::vector<Napi::Object>& pins);

// Texts (already normalized) to segment, frame and embed in a call's task, as WordPiece.encode then embeddingBag do.
struct TextsToEmbed {
  kernels::EmbeddingBagModel model{};
  std::shared_ptr<text::WordPiece> wordpiece;
  std::vector<std::string> first, second;  // second empty, or a pair per text
  text::EncodeOptions options{};
  size_t dim = 0;                           // the model's output width
  size_t rows() const { return first.size(); }
  // out: [rows(), dim]. Off the event loop.
  void embed(float* out) const {
    const text::EncodedBatch b = text::encode_batch(*wordpiece, first, second, options);
    kernels::embedding_bag(model, b.ids.data(), b.type_ids.data(), b.lengths.data(), b.rows, b.seq_len, out);
  }
};

// { model, tokenizer (the core's WordPiece), texts: string[], pairs?: string[], maxLength, marker }, checked:
// at least one text, as many pairs as texts.
TextsToEmbed texts_to_embed_arg(Napi::Env env, const Napi::Value& v, const std::string& who, std::vector<Napi::Object>& pins);

}  // namespace quorum::napi
