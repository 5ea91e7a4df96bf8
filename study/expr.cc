// Parser and evaluator for constraint expressions; see expr.h for the grammar.
#include "study/expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

namespace sweep::study {

struct Expr::Node {
  enum Kind { kLiteral, kVar, kUnary, kBinary } kind = kLiteral;
  int depth = 1;  // of the subtree: parsing, evaluation and destruction all recurse this deep
  ExprValue value;
  std::string name;  // variable name, or operator
  std::shared_ptr<const Node> a, b;
};

namespace {
using NodeP = std::shared_ptr<const Expr::Node>;

// Far beyond any real constraint, far below what the stack holds: a hostile or generated
// expression gets an error instead of a crash.
constexpr int kMaxDepth = 200;

class Parser {
 public:
  explicit Parser(const std::string& t) : t_(t) {}

  Result<NodeP> ParseAll() {
    auto n = Or();
    if (!n.ok()) return n;
    Skip();
    if (pos_ < t_.size()) return Fail("unexpected text");
    return n;
  }

 private:
  Status Fail(std::string_view what) const {
    return Status::InvalidArgument(fmt::format("{} at character {}", what, pos_ + 1));
  }
  void Skip() {
    while (pos_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[pos_]))) ++pos_;
  }
  bool Word(std::string_view w) {
    Skip();
    if (t_.compare(pos_, w.size(), w) != 0) return false;
    size_t end = pos_ + w.size();
    if (end < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[end])) || t_[end] == '_')) return false;
    pos_ = end;
    return true;
  }
  bool Op(std::string_view op) {
    Skip();
    if (t_.compare(pos_, op.size(), op) != 0) return false;
    // Do not read "<" out of "<=" or "=" out of "==".
    if (op.size() == 1 && pos_ + 1 < t_.size() && t_[pos_ + 1] == '=' && (op == "<" || op == ">" || op == "!")) {
      return false;
    }
    pos_ += op.size();
    return true;
  }
  Result<NodeP> Bin(std::string op, NodeP a, NodeP b) {
    auto n = std::make_shared<Expr::Node>();
    n->kind = Expr::Node::kBinary;
    n->name = std::move(op);
    n->depth = 1 + std::max(a->depth, b->depth);
    n->a = std::move(a);
    n->b = std::move(b);
    if (n->depth > kMaxDepth) return TooDeep();
    return NodeP(n);
  }
  Result<NodeP> Un(std::string op, NodeP a) {
    auto n = std::make_shared<Expr::Node>();
    n->kind = Expr::Node::kUnary;
    n->name = std::move(op);
    n->depth = 1 + a->depth;
    n->a = std::move(a);
    if (n->depth > kMaxDepth) return TooDeep();
    return NodeP(n);
  }
  Status TooDeep() const {
    return Status::InvalidArgument(fmt::format("expression nested more than {} levels deep", kMaxDepth));
  }
  // Guards the parser's own recursion (parentheses, prefix operators) before any node exists.
  struct DepthGuard {
    explicit DepthGuard(int& d) : d_(d) { ++d_; }
    ~DepthGuard() { --d_; }
    int& d_;
  };

  Result<NodeP> Or() {
    auto l = And();
    if (!l.ok()) return l;
    NodeP n = *l;
    while (Op("||") || Word("or")) {
      auto r = And();
      if (!r.ok()) return r;
      auto b = Bin("||", n, *r);
      if (!b.ok()) return b;
      n = *b;
    }
    return n;
  }
  Result<NodeP> And() {
    auto l = Not();
    if (!l.ok()) return l;
    NodeP n = *l;
    while (Op("&&") || Word("and")) {
      auto r = Not();
      if (!r.ok()) return r;
      auto b = Bin("&&", n, *r);
      if (!b.ok()) return b;
      n = *b;
    }
    return n;
  }
  Result<NodeP> Not() {
    if (Op("!") || Word("not")) {
      DepthGuard g(nesting_);
      if (nesting_ > kMaxDepth) return TooDeep();
      auto inner = Not();
      if (!inner.ok()) return inner;
      return Un("!", *inner);
    }
    return Cmp();
  }
  Result<NodeP> Cmp() {
    auto l = Sum();
    if (!l.ok()) return l;
    for (std::string_view op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (Op(op)) {
        auto r = Sum();
        if (!r.ok()) return r;
        return Bin(std::string(op), *l, *r);
      }
    }
    return l;
  }
  Result<NodeP> Sum() {
    auto l = Prod();
    if (!l.ok()) return l;
    NodeP n = *l;
    while (true) {
      std::string op = Op("+") ? "+" : Op("-") ? "-" : "";
      if (op.empty()) return n;
      auto r = Prod();
      if (!r.ok()) return r;
      auto b = Bin(op, n, *r);
      if (!b.ok()) return b;
      n = *b;
    }
  }
  Result<NodeP> Prod() {
    auto l = Unary();
    if (!l.ok()) return l;
    NodeP n = *l;
    while (true) {
      std::string op = Op("*") ? "*" : Op("/") ? "/" : Op("%") ? "%" : "";
      if (op.empty()) return n;
      auto r = Unary();
      if (!r.ok()) return r;
      auto b = Bin(op, n, *r);
      if (!b.ok()) return b;
      n = *b;
    }
  }
  Result<NodeP> Unary() {
    if (Op("-")) {
      DepthGuard g(nesting_);
      if (nesting_ > kMaxDepth) return TooDeep();
      auto inner = Unary();
      if (!inner.ok()) return inner;
      return Un("-", *inner);
    }
    return Atom();
  }
  Result<NodeP> Atom() {
    Skip();
    if (pos_ >= t_.size()) return Fail("expected a value but the expression ended");
    auto n = std::make_shared<Expr::Node>();
    char c = t_[pos_];
    if (c == '(') {
      ++pos_;
      DepthGuard g(nesting_);
      if (nesting_ > kMaxDepth) return TooDeep();
      auto inner = Or();
      if (!inner.ok()) return inner;
      if (!Op(")")) return Fail("expected ')'");
      return inner;
    }
    if (c == '"' || c == '\'') {
      size_t end = t_.find(c, pos_ + 1);
      if (end == std::string::npos) return Fail("unterminated string");
      n->value = t_.substr(pos_ + 1, end - pos_ - 1);
      pos_ = end + 1;
      return NodeP(n);
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      double v = 0;
      auto [p, ec] = std::from_chars(t_.data() + pos_, t_.data() + t_.size(), v);
      if (ec != std::errc()) return Fail("bad number");
      pos_ = static_cast<size_t>(p - t_.data());
      n->value = v;
      return NodeP(n);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '_')) ++pos_;
      std::string word = t_.substr(start, pos_ - start);
      if (word == "true" || word == "false") {
        n->value = word == "true";
      } else if (word == "and" || word == "or" || word == "not") {
        pos_ = start;
        return Fail(fmt::format("expected a value before '{}'", word));
      } else {
        n->kind = Expr::Node::kVar;
        n->name = word;
      }
      return NodeP(n);
    }
    return Fail(fmt::format("unexpected '{}'", c));
  }

  const std::string& t_;
  size_t pos_ = 0;
  int nesting_ = 0;
};

std::string TypeName(const ExprValue& v) {
  return std::holds_alternative<double>(v) ? "number" : std::holds_alternative<std::string>(v) ? "string" : "boolean";
}

Result<ExprValue> EvalNode(const Expr::Node& n, const std::map<std::string, ExprValue>& vars) {
  switch (n.kind) {
    case Expr::Node::kLiteral:
      return n.value;
    case Expr::Node::kVar: {
      auto it = vars.find(n.name);
      if (it == vars.end()) return Status::InvalidArgument(fmt::format("unknown name '{}'", n.name));
      return it->second;
    }
    case Expr::Node::kUnary: {
      auto a = EvalNode(*n.a, vars);
      if (!a.ok()) return a;
      if (n.name == "!") {
        if (!std::holds_alternative<bool>(*a)) return Status::InvalidArgument("'!' needs a boolean");
        return ExprValue(!std::get<bool>(*a));
      }
      if (!std::holds_alternative<double>(*a)) return Status::InvalidArgument("'-' needs a number");
      return ExprValue(-std::get<double>(*a));
    }
    case Expr::Node::kBinary:
      break;
  }
  const std::string& op = n.name;
  auto a = EvalNode(*n.a, vars);
  if (!a.ok()) return a;
  if (op == "&&" || op == "||") {
    if (!std::holds_alternative<bool>(*a)) return Status::InvalidArgument(fmt::format("'{}' needs booleans", op));
    bool av = std::get<bool>(*a);
    if (op == "&&" && !av) return ExprValue(false);
    if (op == "||" && av) return ExprValue(true);
    auto b = EvalNode(*n.b, vars);
    if (!b.ok()) return b;
    if (!std::holds_alternative<bool>(*b)) return Status::InvalidArgument(fmt::format("'{}' needs booleans", op));
    return *b;
  }
  auto b = EvalNode(*n.b, vars);
  if (!b.ok()) return b;
  if (a->index() != b->index()) {
    return Status::InvalidArgument(fmt::format("cannot apply '{}' to a {} and a {}", op, TypeName(*a), TypeName(*b)));
  }
  if (op == "==") return ExprValue(*a == *b);
  if (op == "!=") return ExprValue(*a != *b);
  if (op == "<" || op == "<=" || op == ">" || op == ">=") {
    if (std::holds_alternative<bool>(*a))
      return Status::InvalidArgument(fmt::format("cannot order booleans with '{}'", op));
    bool r = op == "<" ? *a < *b : op == "<=" ? *a <= *b : op == ">" ? *a > *b : *a >= *b;
    return ExprValue(r);
  }
  if (!std::holds_alternative<double>(*a)) return Status::InvalidArgument(fmt::format("'{}' needs numbers", op));
  double x = std::get<double>(*a), y = std::get<double>(*b);
  if (op == "+") return ExprValue(x + y);
  if (op == "-") return ExprValue(x - y);
  if (op == "*") return ExprValue(x * y);
  if (y == 0) return Status::InvalidArgument(fmt::format("division by zero in '{}'", op));
  if (op == "/") return ExprValue(x / y);
  return ExprValue(std::fmod(x, y));
}

void Collect(const Expr::Node& n, std::vector<std::string>& out) {
  if (n.kind == Expr::Node::kVar) {
    if (std::find(out.begin(), out.end(), n.name) == out.end()) out.push_back(n.name);
  }
  if (n.a) Collect(*n.a, out);
  if (n.b) Collect(*n.b, out);
}

void CollectStringEqualities(const Expr::Node& n, std::vector<std::pair<std::string, std::string>>& out) {
  if (n.kind == Expr::Node::kBinary && (n.name == "==" || n.name == "!=") && n.a && n.b) {
    for (const auto& [var, lit] : {std::pair(n.a.get(), n.b.get()), std::pair(n.b.get(), n.a.get())}) {
      if (var->kind == Expr::Node::kVar && lit->kind == Expr::Node::kLiteral &&
          std::holds_alternative<std::string>(lit->value)) {
        out.emplace_back(var->name, std::get<std::string>(lit->value));
      }
    }
  }
  if (n.a) CollectStringEqualities(*n.a, out);
  if (n.b) CollectStringEqualities(*n.b, out);
}

}  // namespace

Result<Expr> Expr::Parse(const std::string& text) {
  Parser p(text);
  auto root = p.ParseAll();
  if (!root.ok()) return root.status();
  Expr e;
  e.root_ = *root;
  return e;
}

Result<ExprValue> Expr::Eval(const std::map<std::string, ExprValue>& vars) const { return EvalNode(*root_, vars); }

Result<bool> Expr::EvalBool(const std::map<std::string, ExprValue>& vars) const {
  auto v = Eval(vars);
  if (!v.ok()) return v.status();
  if (!std::holds_alternative<bool>(*v)) {
    return Status::InvalidArgument(fmt::format("the expression gives a {}, not true/false", TypeName(*v)));
  }
  return std::get<bool>(*v);
}

std::vector<std::string> Expr::Variables() const {
  std::vector<std::string> out;
  Collect(*root_, out);
  return out;
}

std::vector<std::pair<std::string, std::string>> Expr::StringEqualities() const {
  std::vector<std::pair<std::string, std::string>> out;
  CollectStringEqualities(*root_, out);
  return out;
}

}  // namespace sweep::study
