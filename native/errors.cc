#include "errors.h"

#include <string.h>

namespace nfnl {

std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  if (name != nullptr) return name;
  return "E" + std::to_string(err);
}

Napi::Error SystemError(Napi::Env env, int err, const std::string& syscall) {
  std::string message = syscall + ": " + strerror(err) + " (" + ErrnoName(err) + ")";
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, ErrnoName(err)));
  error.Set("errno", Napi::Number::New(env, err));
  error.Set("syscall", Napi::String::New(env, syscall));
  return error;
}

}  // namespace nfnl
