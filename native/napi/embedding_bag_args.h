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
  // Rows [r0, r1) into out [r1 - r0, dim], on the calling thread. Off the event loop.
  void embed_rows(size_t r0, size_t r1, float* out) const;
  // out: [rows(), dim], on the pool. Off the event loop.
  void embed(float* out) const;
};

// Several encoders' texts (mufSearch: every expert's questions) segmented and embedded in one parallel region, a few
// texts a task: one fork and join for all of them, and the segmenting, which is serial within a batch, spread over the
// threads. A failure is thrown as the first one in (job, row) order, its message led by that job's label.
void embed_all(const TextsToEmbed* const* jobs, float* const* outs, const std::string* labels, size_t n);

// { model, tokenizer (the core's WordPiece), texts: string[], pairs?: string[], maxLength, marker }, checked:
// at least one text, as many pairs as texts.
TextsToEmbed texts_to_embed_arg(Napi::Env env, const Napi::Value& v, const std::string& who, std::vector<Napi::Object>& pins);

}  // namespace quorum::napi
