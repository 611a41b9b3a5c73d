// tessel's warnings: a request that is carried out but has no effect as written (an option that
// another option switches off, such as Nesterov momentum with momentum 0). Not errors, because
// hyper-parameter sweeps set such combinations on purpose, but never silent. Each warning is one
// sentence handed to the current handler; the default writes "tessel: warning: <sentence>" to
// stderr. Replace it (before any other thread uses tessel) to log, collect or throw instead.
#pragma once

#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>

namespace tessel {

using WarningHandler = std::function<void(std::string_view)>;

namespace detail {

inline WarningHandler& warning_handler_slot() {
  static WarningHandler handler = [](std::string_view s) {
    std::cerr << "tessel: warning: " << s << '\n';
  };
  return handler;
}

inline void warn(std::string_view sentence) {
  if (auto const& h = warning_handler_slot()) h(sentence);
}

}  // namespace detail

// Installs `handler` (an empty one drops warnings) and returns the previous one, so a caller can
// restore it.
inline WarningHandler set_warning_handler(WarningHandler handler) {
  return std::exchange(detail::warning_handler_slot(), std::move(handler));
}

}  // namespace tessel
