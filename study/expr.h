// Constraint expressions over parameters, e.g. `tp * pp <= gpus && (optimizer != "sgd" || lr < 0.1)`.
// A tiny language of its own because constraints mix numbers and strings (precision == "fp8"),
// which the arithmetic-only parsers in Debian (muparser) cannot compare.
// Grammar: or := and (('||'|'or') and)*; and := not (('&&'|'and') not)*; not := ('!'|'not') not | cmp;
// cmp := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?; sum := prod (('+'|'-') prod)*;
// prod := unary (('*'|'/'|'%') unary)*; unary := '-' unary | atom;
// atom := number | "string" | 'string' | true | false | name | '(' or ')'.
// Module study/: the study file; uses base/, logs/, stopping/ (and slurm/'s template renderer).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "base/status.h"

namespace sweep::study {

using ExprValue = std::variant<double, std::string, bool>;

class Expr {
 public:
  struct Node;
  // Parses `text`; errors say at which character and what was expected.
  static Result<Expr> Parse(const std::string& text);

  // Evaluates with `vars`; type errors (e.g. "fp8" < 3) and unknown names are errors.
  Result<ExprValue> Eval(const std::map<std::string, ExprValue>& vars) const;
  // Evaluates and requires a boolean result.
  Result<bool> EvalBool(const std::map<std::string, ExprValue>& vars) const;

  // Names the expression refers to.
  std::vector<std::string> Variables() const;
  // Each `name == "text"` or `name != "text"` (either side): the study checks "text" is one of the
  // parameter's values, since a misspelt one makes the comparison always false or always true.
  std::vector<std::pair<std::string, std::string>> StringEqualities() const;

 private:
  std::shared_ptr<const Node> root_;
};

}  // namespace sweep::study
