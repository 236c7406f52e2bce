#include "rom_model.h"

#include <cmath>
#include <limits>

#include "../common/error.h"

namespace quorum::torchx {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

const char* rom_head_name(int h) {
  static const char* names[kRomHeads] = {"retrieval", "ict", "phrase_ict"};
  return h >= 0 && h < kRomHeads ? names[h] : "?";
}

void RomConfig::validate() const {
  encoder.validate();
  need(encoder.routing == Routing::kNone, "ERR_ARG", "ROM's encoder has no TASER routing");
  need(!encoder.token_weights && !encoder.center && encoder.projection_dim == 0 && encoder.projection_hidden == 0,
       "ERR_ARG", "ROM's encoder takes no token weights, centre or projection (its task heads are the projections)");
  need(encoder.embeddings, "ERR_ARG", "ROM's encoder needs its embeddings");
  need(encoder.type_vocab >= 2, "ERR_ARG", "ROM's reader needs two token types (question and passage)");
  need(head_dim >= 0 && head_dim <= 65536, "ERR_RANGE", "headDim must be in [0, 65536]");
  need(encoder.layers > 0 || encoder.pooling != Pooling::kCls, "ERR_ARG",
       "cls pooling needs at least one Transformer block (with 0 blocks [CLS] is one fixed vector)");
}

RomModel::RomModel(RomConfig config) : config_(std::move(config)) {
  config_.validate();
  encoder_ = std::make_unique<BertEncoder>(config_.encoder);
  NamedTensors params;
  for (const auto& [name, t] : encoder_->parameters()) params.emplace_back("encoder." + name, t);
  torch::NoGradGuard no_grad;
  auto add = [&](const std::string& name, torch::Tensor t) { params.emplace_back(name, t.set_requires_grad(true)); };
  const int64_t H = config_.encoder.hidden, D = config_.out_dim();
  for (int h = 0; h < kRomHeads; ++h) {
    const std::string n = rom_head_name(h);
    add(n + ".weight", D == H ? torch::eye(H) : torch::randn({D, H}) * 0.02);
    add(n + ".bias", torch::zeros({D}));
  }
  add("reader.span.weight", torch::randn({2, H}) * 0.02);
  add("reader.span.bias", torch::zeros({2}));
  add("reader.relevance.weight", torch::randn({1, H}) * 0.02);
  add("reader.relevance.bias", torch::zeros({1}));
  set_parameters(std::move(params));
}

torch::Tensor RomModel::head(const torch::Tensor& state, RomHead h) const {
  const std::string n = rom_head_name(int(h));
  torch::Tensor v = torch::linear(state, p(n + ".weight"), p(n + ".bias"));
  return config_.encoder.normalize ? unit_rows(v) : v;
}

torch::Tensor RomModel::encode(const TokenBatch& batch, Side side, RomHead h) {
  torch::NoGradGuard no_grad;
  const TokenStates t = encoder_->token_states(batch, side, false);
  return head(encoder_->pool(t.x, t.valid, batch.ids), h).contiguous();
}

torch::Tensor RomModel::answer_positions(const TokenBatch& inputs) {
  const int64_t T = inputs.ids.size(1);
  const torch::Tensor pos = torch::arange(T, torch::kLong).unsqueeze(0);
  return (inputs.types >= 1) & (pos < (inputs.lengths.unsqueeze(1) - 1));
}

ReaderOutput RomModel::reader_logits(const TokenBatch& inputs, bool training) const {
  const TokenStates t = encoder_->token_states(inputs, Side::kPassage, training);
  const torch::Tensor span = torch::linear(t.x, p("reader.span.weight"), p("reader.span.bias"));  // [N, T, 2]
  const torch::Tensor allowed = answer_positions(inputs);
  ReaderOutput out;
  out.start = span.select(2, 0).masked_fill(~allowed, kNegInf);
  out.end = span.select(2, 1).masked_fill(~allowed, kNegInf);
  out.relevance = torch::linear(t.x.select(1, 0), p("reader.relevance.weight"), p("reader.relevance.bias")).squeeze(1);
  return out;
}

ReaderOutput RomModel::read(const TokenBatch& inputs) {
  torch::NoGradGuard no_grad;
  ReaderOutput out = reader_logits(inputs, false);
  return {out.start.contiguous(), out.end.contiguous(), out.relevance.contiguous()};
}

RomStepStats RomModel::accumulate(const TrainBatch& b, RomHead h, bool normalize, ProcessGroup* group) {
  check_batch(b);
  const TokenStates tq = encoder_->token_states(b.queries, Side::kQuery, true);
  const TokenStates tp = encoder_->token_states(b.passages, Side::kPassage, true);
  torch::Tensor q = head(encoder_->pool(tq.x, tq.valid, b.queries.ids), h);
  torch::Tensor d = head(encoder_->pool(tp.x, tp.valid, b.passages.ids), h);
  torch::Tensor positives = b.positives, ignore = b.ignore;
  if (group && group->size() > 1) gather_batch(*group, q, d, positives, ignore);
  torch::Tensor scores = Retriever::batch_scores(q, d, ignore);
  if (b.temperature != 1.0) scores = scores / b.temperature;
  const torch::Tensor loss = torch::nll_loss(torch::log_softmax(scores, 1), positives);
  RomStepStats s;
  // A uniform guess over the passages each question's softmax reads (ignored pairs left out).
  s.chance = torch::isfinite(scores.detach()).sum(1).to(torch::kDouble).log().mean().item<double>();
  const double norm = normalize && s.chance > 0 ? 1.0 / s.chance : 1.0;
  (loss * (b.loss_scale * norm)).backward();
  s.loss = loss.item<double>();
  s.correct = (scores.detach().argmax(1) == positives).sum().item<int64_t>();
  s.questions = q.size(0);
  s.tokens = b.queries.lengths.sum().item<int64_t>() + b.passages.lengths.sum().item<int64_t>();
  return s;
}

void check_reader_batch(const ReaderBatch& b) {
  const int64_t rows = b.inputs.ids.size(0);
  need(b.passages >= 1, "ERR_RANGE", "a reader batch needs at least one passage per question");
  need(rows > 0 && rows % b.passages == 0, "ERR_SHAPE",
       std::to_string(rows) + " reader rows are not questions x " + std::to_string(b.passages) + " passages");
  const int64_t nq = rows / b.passages;
  need(b.positive.numel() == nq && b.start.numel() == nq && b.end.numel() == nq, "ERR_SHAPE",
       "a reader batch needs one positive, start and end per question (" + std::to_string(nq) + ")");
  need(b.positive.min().item<int64_t>() >= 0 && b.positive.max().item<int64_t>() < b.passages, "ERR_RANGE",
       "a positive passage index is outside 0.." + std::to_string(b.passages - 1));
  const int64_t T = b.inputs.ids.size(1);
  need(b.start.min().item<int64_t>() >= 0 && b.end.max().item<int64_t>() < T && (b.start <= b.end).all().item<bool>(),
       "ERR_RANGE", "an answer span is outside its row or ends before it starts");
  const torch::Tensor row = torch::arange(nq, torch::kLong) * b.passages + b.positive;
  const torch::Tensor allowed = RomModel::answer_positions(b.inputs).index_select(0, row);
  const bool inside = allowed.gather(1, b.start.unsqueeze(1)).all().item<bool>() &&
                      allowed.gather(1, b.end.unsqueeze(1)).all().item<bool>();
  need(inside, "ERR_RANGE", "an answer span is not inside its positive passage's tokens");
}

torch::Tensor RomModel::reader_loss(const ReaderOutput& out, const ReaderBatch& b) {
  const int64_t P = b.passages, nq = out.relevance.size(0) / P;
  const torch::Tensor row = torch::arange(nq, torch::kLong) * P + b.positive;
  const torch::Tensor select = -torch::log_softmax(out.relevance.view({nq, P}), 1).gather(1, b.positive.unsqueeze(1)).squeeze(1);
  const torch::Tensor s = -torch::log_softmax(out.start.index_select(0, row), 1).gather(1, b.start.unsqueeze(1)).squeeze(1);
  const torch::Tensor e = -torch::log_softmax(out.end.index_select(0, row), 1).gather(1, b.end.unsqueeze(1)).squeeze(1);
  return select + s + e;
}

RomStepStats RomModel::accumulate_reader(const ReaderBatch& b, ProcessGroup* group) {
  check_reader_batch(b);
  const ReaderOutput out = reader_logits(b.inputs, true);
  const torch::Tensor per_question = reader_loss(out, b);
  const int64_t P = b.passages, nq = out.relevance.size(0) / P;
  const torch::Tensor row = torch::arange(nq, torch::kLong) * P + b.positive;
  // Uniform over the P passages, and over the positive row's passage tokens for the start and for the end.
  const torch::Tensor log_tokens = answer_positions(b.inputs).index_select(0, row).sum(1).to(torch::kDouble).log();
  const torch::Tensor picked = out.relevance.detach().view({nq, P}).argmax(1) == b.positive;
  const torch::Tensor span = (out.start.detach().index_select(0, row).argmax(1) == b.start) &
                             (out.end.detach().index_select(0, row).argmax(1) == b.end);
  // The batch's sums: questions, their losses, log token counts and what they got right (over all ranks with a group:
  // questions do not interact in the reader's loss, so the global mean is the ranks' sums over the global count).
  torch::Tensor sums = torch::stack({torch::tensor(double(nq), torch::kDouble), per_question.detach().to(torch::kDouble).sum(),
                                     log_tokens.sum(), picked.sum().to(torch::kDouble), span.sum().to(torch::kDouble),
                                     (picked & span).sum().to(torch::kDouble)});
  if (group && group->size() > 1) {
    torch::Tensor f = sums.to(torch::kFloat);  // the collectives carry float32
    group->all_reduce_sum({f});
    sums = f.to(torch::kDouble);
  }
  const auto v = sums.accessor<double, 1>();
  const double questions = v[0];
  RomStepStats s;
  s.chance = std::log(double(P)) + 2 * v[2] / questions;
  const double norm = b.normalize && s.chance > 0 ? 1.0 / s.chance : 1.0;
  (per_question.sum() * (b.loss_scale * norm / questions)).backward();
  s.loss = v[1] / questions;
  s.questions = int64_t(questions);
  s.tokens = b.inputs.lengths.sum().item<int64_t>();
  s.passage_correct = int64_t(v[3]);
  s.span_correct = int64_t(v[4]);
  s.correct = int64_t(v[5]);
  return s;
}

}  // namespace quorum::torchx
