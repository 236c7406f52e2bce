#include "came_model.h"

#include <cmath>
#include <limits>

#include "../common/error.h"
#include "came_loss.h"
#include "kernel_autograd.h"

namespace quorum::torchx {
const char* came_expert_name(int e) {
  static const char* names[kCameExperts] = {"lexical", "local", "global"};
  return e >= 0 && e < kCameExperts ? names[e] : "?";
}

void CameConfig::validate() const {
  encoder.validate();
  need(encoder.routing == Routing::kNone, "ERR_ARG", "CAME's encoder has no TASER routing");
  need(!encoder.token_weights && !encoder.center && encoder.projection_dim == 0, "ERR_ARG",
       "CAME's encoder takes no token weights, centre or projection");
  need(expert_layers >= 0 && expert_layers <= 64, "ERR_RANGE", "expertLayers must be in [0, 64]");
  need(experts[0] || experts[1] || experts[2], "ERR_ARG", "a CAME model needs at least one expert");
  need(local_dim >= 1 && local_dim <= 4096, "ERR_RANGE", "localDim must be in [1, 4096]");
  need(encoder.layers + expert_layers > 0 || encoder.pooling != Pooling::kCls || !experts[2], "ERR_ARG",
       "the global expert's cls pooling needs at least one block (shared or its own)");
}

void CameTraining::validate() const {
  need(tau > 0 && std::isfinite(tau), "ERR_RANGE", "tau must be finite and > 0");
  need(flops_query >= 0 && flops_passage >= 0 && std::isfinite(flops_query) && std::isfinite(flops_passage), "ERR_RANGE",
       "the FLOPS weights must be finite and >= 0");
  need(flops_ramp >= 0, "ERR_RANGE", "flopsRamp must be >= 0");
  for (double t : temperature) need(t > 0 && std::isfinite(t), "ERR_RANGE", "temperatures must be finite and > 0");
}

CameModel::CameModel(CameConfig config) : config_(std::move(config)) {
  config_.validate();
  const EncoderConfig& c = config_.encoder;
  bottom_ = std::make_unique<BertEncoder>(c);
  NamedTensors params;
  for (const auto& [name, t] : bottom_->parameters()) params.emplace_back("bottom." + name, t);
  torch::NoGradGuard no_grad;
  auto add = [&](const std::string& name, torch::Tensor t) { params.emplace_back(name, t.set_requires_grad(true)); };
  for (int e = 0; e < kCameExperts; ++e) {
    if (!config_.experts[e]) continue;
    const std::string name = came_expert_name(e);
    if (config_.expert_layers > 0) {
      EncoderConfig tc = c;
      tc.embeddings = false;
      tc.layers = config_.expert_layers;
      towers_[e] = std::make_unique<BertEncoder>(tc);
      for (const auto& [n, t] : towers_[e]->parameters()) params.emplace_back(name + "." + n, t);
    }
    if (e == int(CameExpert::kLexical)) {
      // BERT's MLM head; the transform starts as the identity when it is square, so that at step 0 a token's
      // logit for word v is close to <its state, v's embedding> (GloVe similarity: the word and its neighbours).
      const int64_t E = c.embedding_size, H = c.hidden;
      add("lexical.head.transform.dense.weight", E == H ? torch::eye(H) : torch::randn({E, H}) * 0.02);
      add("lexical.head.transform.dense.bias", torch::zeros({E}));
      add("lexical.head.transform.LayerNorm.weight", torch::ones({E}));
      add("lexical.head.transform.LayerNorm.bias", torch::zeros({E}));
      add("lexical.head.decoder.bias", torch::zeros({c.vocab_size}));
    } else if (e == int(CameExpert::kLocal)) {
      add("local.head.weight", torch::randn({config_.local_dim, c.hidden}) * 0.02);
      add("local.head.bias", torch::zeros({config_.local_dim}));
    }
  }
  set_parameters(std::move(params));
  CameTraining t;
  t.temperature[int(CameExpert::kGlobal)] = c.normalize ? 0.05 : 1.0;
  training_ = t;
}

void CameModel::set_training(const CameTraining& t) {
  t.validate();
  training_ = t;
}

torch::Tensor CameModel::lexical_weights(const torch::Tensor& x, const torch::Tensor& valid) const {
  const int64_t E = config_.encoder.embedding_size;
  torch::Tensor h = torch::gelu(torch::linear(x, p("lexical.head.transform.dense.weight"), p("lexical.head.transform.dense.bias")));
  h = torch::layer_norm(h, {E}, p("lexical.head.transform.LayerNorm.weight"), p("lexical.head.transform.LayerNorm.bias"),
                        config_.encoder.ln_eps);
  const torch::Tensor& emb = p("bottom.embeddings.word_embeddings.weight");
  const torch::Tensor& bias = p("lexical.head.decoder.bias");
  return config_.reference_ops ? splade_decoder_pool_reference(h, valid, emb, bias) : splade_decoder_pool(h, valid, emb, bias);
}

CameModel::Heads CameModel::heads(const TokenStates& bottom, const TokenBatch& batch, Side side, bool training,
                                  std::array<bool, kCameExperts> which) const {
  Heads out;
  auto top = [&](int e) { return towers_[e] ? towers_[e]->transform(bottom, side, training) : bottom.x; };
  if (which[0]) out.lexical = lexical_weights(top(0), bottom.valid);
  if (which[1]) {
    const torch::Tensor t = unit_rows(torch::linear(top(1), p("local.head.weight"), p("local.head.bias")));
    out.local = t * bottom.valid.unsqueeze(2).to(t.scalar_type());
  }
  if (which[2]) {
    const BertEncoder& enc = towers_[2] ? *towers_[2] : *bottom_;
    const torch::Tensor g = enc.pool(top(2), bottom.valid, batch.ids);
    out.global = config_.encoder.normalize ? unit_rows(g) : g;
  }
  return out;
}

CameEncoded CameModel::encode(const TokenBatch& batch, Side side, std::array<bool, kCameExperts> which) {
  for (int e = 0; e < kCameExperts; ++e)
    need(!which[e] || config_.experts[e], "ERR_ARG", std::string("this CAME model has no ") + came_expert_name(e) + " expert");
  torch::NoGradGuard no_grad;
  const TokenStates bottom = bottom_->token_states(batch, side, false);
  Heads h = heads(bottom, batch, side, false, which);
  return {h.lexical, h.local, h.global, batch.lengths};
}

CameStepStats CameModel::accumulate(const TrainBatch& b, ProcessGroup* group) {
  check_batch(b);
  const TokenStates tq = bottom_->token_states(b.queries, Side::kQuery, true);
  const TokenStates tp = bottom_->token_states(b.passages, Side::kPassage, true);
  Heads q = heads(tq, b.queries, Side::kQuery, true, config_.experts);
  Heads d = heads(tp, b.passages, Side::kPassage, true, config_.experts);
  torch::Tensor q_valid = tq.valid, p_lengths = b.passages.lengths, positives = b.positives, ignore = b.ignore;
  if (group && group->size() > 1) {
    // The global batch in rank order, this rank's rows carrying gradient (retriever.h); the same collectives on every
    // rank, in the same order, whatever the batch holds.
    int64_t qo = 0, po = 0, unused = 0;  // this rank's first question and passage rows
    auto both = [&](torch::Tensor& qt, torch::Tensor& pt) {
      if (!qt.defined()) return;
      qt = gather_keeping_own(*group, qt, &qo);
      pt = gather_keeping_own(*group, pt, &po);
    };
    both(q.lexical, d.lexical);
    if (q.local.defined()) {
      // The question tokens and their mask share one padded length.
      const auto qs = pad_to_ranks(*group, {q.local, tq.valid.to(torch::kLong)}, 1);
      q.local = gather_keeping_own(*group, qs[0], &qo);
      d.local = gather_keeping_own(*group, pad_to_ranks(*group, {d.local}, 1)[0], &po);
      q_valid = group->all_gather_rows(qs[1], &unused).to(torch::kBool);
      p_lengths = group->all_gather_rows(b.passages.lengths, &unused);
    }
    both(q.global, d.global);
    gather_targets(*group, qo, po, positives, ignore);
  }

  std::vector<torch::Tensor> scores;
  std::vector<int> experts;
  auto add = [&](int e, torch::Tensor s) {
    scores.push_back(Retriever::mask_ignored(s, ignore) / training_.temperature[e]);
    experts.push_back(e);
  };
  if (q.lexical.defined()) add(0, torch::matmul(q.lexical, d.lexical.t()));
  if (q.local.defined())
    add(1, config_.reference_ops ? maxsim_scores_reference(q.local, q_valid, d.local, p_lengths)
                                 : maxsim_scores(q.local, q_valid, d.local, p_lengths));
  if (q.global.defined()) add(2, torch::matmul(q.global, d.global.t()));

  CameLossParts parts;
  torch::Tensor loss = came_loss(scores, positives, training_.tau, training_.competitive, &parts);
  torch::Tensor total = loss * b.loss_scale;
  CameStepStats s;
  if (q.lexical.defined()) {
    // FLOPS(W) = sum_v (mean_b |w_bv|)^2 over each side's batch
    // (docs/methods/kernels.md#splade-pooling-and-regularizers); w >= 0, so |w| = w.
    const double t = double(optimizer_steps() + 1), ramp = double(training_.flops_ramp);
    const double scale = ramp > 0 ? std::pow(std::min(t, ramp) / ramp, 2.0) : 1.0;
    const torch::Tensor flops = training_.flops_query * q.lexical.mean(0).pow(2).sum() +
                                training_.flops_passage * d.lexical.mean(0).pow(2).sum();
    total = total + scale * b.loss_scale * flops;
    s.flops = flops.item<double>();
    s.flops_lambda = scale;
  }
  total.backward();

  s.loss = loss.item<double>();
  s.questions = positives.size(0);
  s.tokens = b.queries.lengths.sum().item<int64_t>() + b.passages.lengths.sum().item<int64_t>();
  torch::Tensor fused = torch::zeros_like(scores[0].detach());
  for (size_t i = 0; i < experts.size(); ++i) {
    const int e = experts[i];
    const torch::Tensor si = scores[i].detach();
    s.expert_loss[e] = parts.nll[int64_t(i)].item<double>();
    s.weight[e] = parts.weights[int64_t(i)].item<double>();
    s.expert_correct[e] = (si.argmax(1) == positives).sum().item<int64_t>();
    fused = fused + si;
  }
  s.correct = (fused.argmax(1) == positives).sum().item<int64_t>();
  return s;
}

}  // namespace quorum::torchx
