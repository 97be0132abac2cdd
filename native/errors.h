// Errno-carrying JS errors: the one place native code turns a failed syscall into an exception.
#pragma once
#include <napi.h>
#include <string>

namespace nfnl {

// Name of an errno value ("EEXIST"); "E<number>" when libc does not know it.
std::string ErrnoName(int err);

// Error with code ('EEXIST'), errno (positive) and syscall, as Node's own system errors carry.
Napi::Error SystemError(Napi::Env env, int err, const std::string& syscall);

}  // namespace nfnl
