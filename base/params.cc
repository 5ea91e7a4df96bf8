// Parameter values as text; see params.h.
#include "base/params.h"

#include <fmt/format.h>

#include <type_traits>
#include <variant>

namespace sweep {

std::string ParamToString(const ParamValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) return x;
        else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, double>) return fmt::format("{}", x);
        else return std::to_string(x);
      },
      v);
}

}  // namespace sweep
