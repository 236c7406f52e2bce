// The native object behind lib/text/tokenizer.ts: a text::WordPiece shared with async work, and batch encoding
// into Int32Arrays. Strings are copied out of V8 on the main thread; the segmentation itself can run off it.
#include <napi.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../text/wordpiece.h"
#include "addon_data.h"
#include "async_call.h"
#include "errors.h"
#include "index_args.h"
#include "scalar_args.h"

namespace quorum::napi {
namespace {

Napi::Int32Array int32_array(Napi::Env env, const std::vector<int32_t>& v) {
  Napi::Int32Array a = Napi::Int32Array::New(env, v.size());
  if (!v.empty()) std::memcpy(a.Data(), v.data(), v.size() * sizeof(int32_t));
  return a;
}

class TokenizerObject : public Napi::ObjectWrap<TokenizerObject> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "WordPiece",
                       {InstanceMethod<&TokenizerObject::Encode>("encode"),
                        InstanceMethod<&TokenizerObject::Pieces>("pieces"),
                        InstanceMethod<&TokenizerObject::IdOf>("idOf"),
                        InstanceMethod<&TokenizerObject::TokenOf>("tokenOf"),
                        InstanceAccessor<&TokenizerObject::Size>("size")});
  }

  // new WordPiece(tokens: string[], maxWordChars)
  explicit TokenizerObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TokenizerObject>(info) {
    guard(info.Env(), [&] {
      const double max_chars = info[1].IsUndefined() ? 100 : number_arg(info[1], "maxWordChars");
      if (max_chars < 1) throw Error("ERR_RANGE", "maxWordChars must be at least 1");
      wp_ = std::make_shared<text::WordPiece>(strings_arg(info[0], "vocabulary"), size_t(max_chars));
      return info.Env().Undefined();
    });
  }

 private:
  // encode(first: string[], second: string[] | null, maxLength, marker, padToMax, async)
  //   -> { ids: Int32Array, typeIds: Int32Array, lengths: Int32Array, rows, seqLen } (or a Promise of it)
  Napi::Value Encode(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto first = std::make_shared<std::vector<std::string>>(strings_arg(info[0], "texts"));
      auto second = std::make_shared<std::vector<std::string>>();
      if (!info[1].IsNull() && !info[1].IsUndefined()) *second = strings_arg(info[1], "pairs");
      const text::EncodeOptions o = encode_options_arg(*wp_, info[2], info[3], info[4]);
      auto out = std::make_shared<text::EncodedBatch>();
      auto wp = wp_;
      return run_work(
          env, flag(info[5]), {}, Napi::Object::New(env), [=] { *out = text::encode_batch(*wp, *first, *second, o); },
          [out](Napi::Env env, Napi::Object result) {
            result.Set("ids", int32_array(env, out->ids));
            result.Set("typeIds", int32_array(env, out->type_ids));
            result.Set("lengths", int32_array(env, out->lengths));
            result.Set("rows", Napi::Number::New(env, double(out->rows)));
            result.Set("seqLen", Napi::Number::New(env, double(out->seq_len)));
          });
    });
  }

  // pieces(normalized: string) -> Int32Array of piece ids, no framing
  Napi::Value Pieces(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      if (!info[0].IsString()) throw Error("ERR_ARG", "text must be a string");
      std::vector<int32_t> ids;
      wp_->encode_words(info[0].As<Napi::String>().Utf8Value(), ids);
      return Napi::Value(int32_array(info.Env(), ids));
    });
  }

  Napi::Value IdOf(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      if (!info[0].IsString()) throw Error("ERR_ARG", "token must be a string");
      return Napi::Value(Napi::Number::New(info.Env(), wp_->id(info[0].As<Napi::String>().Utf8Value())));
    });
  }

  Napi::Value TokenOf(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      const double i = number_arg(info[0], "id");
      if (i != double(int32_t(i))) throw Error("ERR_RANGE", "token id must be an integer");
      return Napi::Value(Napi::String::New(info.Env(), wp_->token(int32_t(i))));
    });
  }

  Napi::Value Size(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), double(wp_->size())); }

 public:
  const std::shared_ptr<text::WordPiece>& held() const { return wp_; }

 private:
  std::shared_ptr<text::WordPiece> wp_;
};

}  // namespace

text::EncodeOptions encode_options_arg(const text::WordPiece& wp, const Napi::Value& max_length, const Napi::Value& marker,
                                       const Napi::Value& pad_to_max) {
  text::EncodeOptions o;
  const double n = number_arg(max_length, "maxLength");
  if (n < 1 || n > 1e6 || n != double(size_t(n))) throw Error("ERR_RANGE", "maxLength must be an integer in [1, 1e6]");
  o.max_length = size_t(n);
  const double m = number_arg(marker, "marker");
  if (m >= 0 && (m >= double(wp.size()) || m != double(int32_t(m))))
    throw Error("ERR_RANGE", "marker id " + std::to_string(m) + " outside the vocabulary");
  o.marker = m < 0 ? -1 : int32_t(m);
  o.pad_to_max = flag(pad_to_max);
  return o;
}

std::shared_ptr<text::WordPiece> wordpiece_arg(Napi::Env env, const Napi::Value& v, const char* what) {
  return wrapped_arg<TokenizerObject>(v, addon_data(env).wordpiece_ctor, what, "WordPiece tokenizer");
}

void register_tokenizer(Napi::Env env, Napi::Object exports) {
  Napi::Function ctor = TokenizerObject::Init(env);
  addon_data(env).wordpiece_ctor = Napi::Persistent(ctor);
  exports.Set("WordPiece", ctor);
}

}  // namespace quorum::napi
