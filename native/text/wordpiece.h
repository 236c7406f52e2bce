// BERT WordPiece: greedy longest-match-first segmentation of words into vocabulary pieces, and assembly of
// [CLS] / [SEP] framed, truncated and padded id rows. Unicode normalization (lower-casing, NFD accent stripping,
// punctuation and CJK splitting, control-character removal) happens before this, in lib/text/normalize.ts: V8
// already carries the Unicode tables, so the input here is words separated by ASCII spaces.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace quorum::text {

class WordPiece {
 public:
  // `vocab[i]` is the token with id i. Throws ERR_ARG when [UNK], [CLS], [SEP] or [PAD] is missing or a token repeats.
  explicit WordPiece(std::vector<std::string> vocab, size_t max_word_chars = 100);

  // Appends the piece ids of every space-separated word of `normalized`. A word longer than max_word_chars code
  // points, or one that cannot be segmented completely, becomes a single [UNK] (as in BERT).
  void encode_words(std::string_view normalized, std::vector<int32_t>& out) const;

  int32_t id(std::string_view token) const;  // -1 when absent
  const std::string& token(int32_t id) const;
  size_t size() const { return vocab_.size(); }
  int32_t unk() const { return unk_; }
  int32_t cls() const { return cls_; }
  int32_t sep() const { return sep_; }
  int32_t pad() const { return pad_; }

 private:
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int32_t> ids_;
  size_t max_word_chars_;
  int32_t unk_, cls_, sep_, pad_;
};

// One encoded batch: `rows` x `seq_len` ids and token type ids (0 for the first segment with its [CLS] and [SEP],
// 1 for the second), pad id beyond each row's length.
struct EncodedBatch {
  size_t rows = 0, seq_len = 0;
  std::vector<int32_t> ids, type_ids, lengths;
};

struct EncodeOptions {
  size_t max_length = 512;     // including [CLS], [SEP] and the marker
  int32_t marker = -1;         // a task marker id placed right after [CLS], or -1
  bool pad_to_max = false;     // pad every row to max_length instead of the longest row
};

// Frames `first[i]` (and `second[i]` when `second` is non-empty: "[CLS] a [SEP] b [SEP]") and truncates the longer
// segment one piece at a time until the row fits (Hugging Face's longest_first; on a tie the second segment loses).
EncodedBatch encode_batch(const WordPiece& wp, const std::vector<std::string>& first,
                          const std::vector<std::string>& second, const EncodeOptions& options);

}  // namespace quorum::text
