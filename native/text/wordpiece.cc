#include "wordpiece.h"

#include <algorithm>

#include "../common/error.h"

namespace quorum::text {
namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

size_t code_points(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += !is_continuation(c);
  return n;
}

}  // namespace

WordPiece::WordPiece(std::vector<std::string> vocab, size_t max_word_chars)
    : vocab_(std::move(vocab)), max_word_chars_(max_word_chars) {
  ids_.reserve(vocab_.size() * 2);
  for (size_t i = 0; i < vocab_.size(); ++i) {
    if (!ids_.emplace(vocab_[i], int32_t(i)).second)
      throw Error("ERR_ARG", "vocabulary token '" + vocab_[i] + "' appears twice (ids " +
                                 std::to_string(ids_[vocab_[i]]) + " and " + std::to_string(i) + ")");
  }
  auto need = [&](const char* t) {
    const int32_t i = id(t);
    if (i < 0) throw Error("ERR_ARG", std::string("vocabulary has no ") + t + " token");
    return i;
  };
  unk_ = need("[UNK]");
  cls_ = need("[CLS]");
  sep_ = need("[SEP]");
  pad_ = need("[PAD]");
}

int32_t WordPiece::id(std::string_view token) const {
  // C++17 unordered_map has no heterogeneous lookup; a thread-local buffer keeps this allocation-free.
  thread_local std::string key;
  key.assign(token.data(), token.size());
  auto it = ids_.find(key);
  return it == ids_.end() ? -1 : it->second;
}

const std::string& WordPiece::token(int32_t i) const {
  if (i < 0 || size_t(i) >= vocab_.size())
    throw Error("ERR_RANGE", "token id " + std::to_string(i) + " outside the vocabulary of " +
                                 std::to_string(vocab_.size()));
  return vocab_[size_t(i)];
}

void WordPiece::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (code_points(word) > max_word_chars_) {
    out.push_back(unk_);
    return;
  }
  thread_local std::string key;
  const size_t mark = out.size();
  size_t start = 0;
  while (start < word.size()) {
    size_t end = word.size();
    int32_t found = -1;
    while (end > start) {
      key.assign(start > 0 ? "##" : "");
      key.append(word.data() + start, end - start);
      auto it = ids_.find(key);
      if (it != ids_.end()) {
        found = it->second;
        break;
      }
      // Step back one code point, never into the middle of a UTF-8 sequence.
      do --end;
      while (end > start && is_continuation(static_cast<unsigned char>(word[end])));
    }
    if (found < 0) {
      out.resize(mark);
      out.push_back(unk_);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

void WordPiece::encode_words(std::string_view normalized, std::vector<int32_t>& out) const {
  size_t i = 0;
  while (i < normalized.size()) {
    while (i < normalized.size() && normalized[i] == ' ') ++i;
    size_t j = i;
    while (j < normalized.size() && normalized[j] != ' ') ++j;
    if (j > i) encode_word(normalized.substr(i, j - i), out);
    i = j;
  }
}

EncodedBatch encode_batch(const WordPiece& wp, const std::vector<std::string>& first,
                          const std::vector<std::string>& second, const EncodeOptions& o) {
  const bool pair = !second.empty();
  if (pair && second.size() != first.size())
    throw Error("ERR_SHAPE", std::to_string(first.size()) + " first segments but " + std::to_string(second.size()) +
                                 " second segments");
  const size_t framing = (pair ? 3 : 2) + (o.marker >= 0 ? 1 : 0);
  if (o.max_length <= framing)
    throw Error("ERR_RANGE", "maxLength " + std::to_string(o.max_length) + " leaves no room for text (the framing takes " +
                                 std::to_string(framing) + ")");
  const size_t budget = o.max_length - framing;

  EncodedBatch b;
  b.rows = first.size();
  std::vector<std::vector<int32_t>> rows(b.rows), types(b.rows);
  std::vector<int32_t> a, c;
  size_t longest = 0;
  for (size_t r = 0; r < b.rows; ++r) {
    a.clear();
    c.clear();
    wp.encode_words(first[r], a);
    if (pair) wp.encode_words(second[r], c);
    size_t la = a.size(), lc = c.size();
    while (la + lc > budget) (la > lc ? la : lc)--;
    auto& ids = rows[r];
    auto& ty = types[r];
    ids.reserve(la + lc + framing);
    ids.push_back(wp.cls());
    if (o.marker >= 0) ids.push_back(o.marker);
    ids.insert(ids.end(), a.begin(), a.begin() + la);
    ids.push_back(wp.sep());
    ty.assign(ids.size(), 0);
    if (pair) {
      ids.insert(ids.end(), c.begin(), c.begin() + lc);
      ids.push_back(wp.sep());
      ty.resize(ids.size(), 1);
    }
    longest = std::max(longest, ids.size());
  }
  b.seq_len = o.pad_to_max ? o.max_length : longest;
  b.ids.assign(b.rows * b.seq_len, wp.pad());
  b.type_ids.assign(b.rows * b.seq_len, 0);
  b.lengths.resize(b.rows);
  for (size_t r = 0; r < b.rows; ++r) {
    std::copy(rows[r].begin(), rows[r].end(), b.ids.begin() + r * b.seq_len);
    std::copy(types[r].begin(), types[r].end(), b.type_ids.begin() + r * b.seq_len);
    b.lengths[r] = int32_t(rows[r].size());
  }
  return b;
}

}  // namespace quorum::text
