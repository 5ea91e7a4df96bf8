// libFuzzer target for constraint expressions (study/expr.h): a constraint comes
// straight from a study file, so parsing and evaluating any text must end in a value or an
// InvalidArgument, never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "study/expr.h"

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "expr_fuzz: %s\n", what.c_str());
  std::abort();
}

// Every value type, and the built-ins ExpandSpace passes, so type errors and comparisons of
// mixed types are reachable.
const std::map<std::string, sweep::study::ExprValue>& Vars() {
  static const std::map<std::string, sweep::study::ExprValue> kVars = {
      {"nodes", 2.0},
      {"gpus_per_node", 4.0},
      {"gpus", 8.0},
      {"tp", 2.0},
      {"pp", 1.0},
      {"mbs", 0.0},
      {"lr", 1e-3},
      {"neg", -1.5},
      {"precision", std::string("fp8")},
      {"opt", std::string("")},
      {"flag", true},
      {"off", false},
  };
  return kVars;
}

void CheckError(const sweep::Status& st, const char* where) {
  if (st.code() != sweep::Status::Code::kInvalidArgument) Die(std::string(where) + ": " + st.ToString());
  if (st.message().empty()) Die(std::string(where) + ": empty message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto expr = sweep::study::Expr::Parse(text);
  if (!expr.ok()) {
    CheckError(expr.status(), "Parse");
    return 0;
  }
  bool all_known = true;
  for (const auto& v : expr->Variables()) {
    if (v.empty()) Die("empty variable name");
    if (!Vars().count(v)) all_known = false;
  }
  auto value = expr->Eval(Vars());
  if (!value.ok()) {
    CheckError(value.status(), "Eval");
    // The loader rejects constraints with unknown names up front, relying on this.
    if (all_known && value.status().message().find("unknown name") != std::string::npos) {
      Die("unknown name although every variable is bound: " + value.status().message());
    }
  }
  auto b = expr->EvalBool(Vars());
  if (!b.ok()) {
    CheckError(b.status(), "EvalBool");
    if (value.ok() && std::holds_alternative<bool>(*value)) Die("EvalBool failed on a boolean value");
  } else if (!value.ok() || !std::holds_alternative<bool>(*value) || std::get<bool>(*value) != *b) {
    Die("EvalBool disagrees with Eval");
  }
  return 0;
}
