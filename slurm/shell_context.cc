// A reader of bash syntax just deep enough to say where each placeholder stands; see
// shell_context.h. Every construct it does not follow makes it refuse, never guess.
#include "slurm/shell_context.h"

#include <algorithm>
#include <array>
#include <optional>
#include <regex>

#include "slurm/shell_commands.h"

namespace sweep::slurm {
namespace {

constexpr size_t kNone = std::string_view::npos;

enum class Mode {
  kCode,       // unquoted shell code: the script, $( ), <( ), >( )
  kArray,      // inside name=( ... ): words, no commands
  kSingle,     // '...'
  kDouble,     // "..." and $"..."
  kAnsi,       // $'...'
  kBackquote,  // `...`
  kArith,      // $(( )), (( )), $[ ]
  kParam,      // ${ }
};

struct Frame {
  Mode mode = Mode::kCode;
  size_t begin = 0;              // where it opened
  bool closes_on_paren = false;  // kCode opened by $( <( >(: a ')' at depth 0 closes it
  int depth = 0;                 // kCode/kArith: ( ) nesting, kParam: { } nesting
  char open = '(', close = ')';  // kArith: $[ ] counts brackets
  // kCode / kArray: the simple command being read.
  std::vector<std::string> words;
  size_t word_begin = kNone;     // start of the word being read
  bool word_bracket = false;     // an unquoted '[' in it
  bool redirect_target = false;  // the word being read (or next) is a redirection's target
  int cases = 0;                 // open case ... esac
  bool case_pattern = false;     // reading case patterns, up to ')'
  size_t dbracket = kNone;       // inside [[ ]]: where it began
};

Frame Open(Mode mode, size_t begin, bool closes_on_paren = false, int depth = 0) {
  Frame f;
  f.mode = mode;
  f.begin = begin;
  f.closes_on_paren = closes_on_paren;
  f.depth = depth;
  return f;
}

struct Heredoc {
  std::string delimiter;
  bool quoted = false, strip_tabs = false;
};

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsOperatorChar(char c) { return c == ';' || c == '&' || c == '|' || c == '<' || c == '>' || c == '(' || c == ')'; }

class Reader {
 public:
  Reader(std::string_view t, const std::vector<std::pair<size_t, size_t>>& holders) : t_(t), holders_(holders) {}

  std::vector<PlaceholderSite> Run() {
    CheckIntegerDeclarations();
    stack_.push_back(Open(Mode::kCode, 0));
    size_t i = 0;
    while (i < t_.size()) {
      // A backslash or '$' just before a placeholder makes the reader step over its first brace.
      while (next_ < holders_.size() && i > holders_[next_].first) {
        Refuse(holders_[next_].first, "right after a backslash or '$', which changes how its quoting is read");
        ++next_;
      }
      if (next_ < holders_.size() && i == holders_[next_].first) {
        Place(i);
        i = holders_[next_++].second;
        continue;
      }
      i = Step(i);
    }
    // Unterminated constructs: bash would stop with a syntax error somewhere after their start.
    if (stack_.size() > 1) Lose(stack_.back().begin, "a quote, substitution or bracket that is never closed");
    while (sites_.size() < holders_.size()) sites_.push_back(Refused(holders_[sites_.size()].first, ""));
    for (size_t k = 0; k < sites_.size(); ++k) {
      if (lost_ != kNone && holders_[k].first >= lost_ && sites_[k].context != ShellContext::kRefused) {
        sites_[k] = Refused(holders_[k].first, "");
      }
    }
    return sites_;
  }

 private:
  int LineOf(size_t pos) const { return 1 + static_cast<int>(std::count(t_.begin(), t_.begin() + pos, '\n')); }

  PlaceholderSite Refused(size_t pos, std::string why) const {
    PlaceholderSite s;
    s.context = ShellContext::kRefused;
    if (lost_ != kNone && pos >= lost_) {
      s.refusal = "after line " + std::to_string(LineOf(lost_)) + ", where the template has " + lost_why_ +
                  " that this reader does not follow";
    } else if (integer_decl_ != kNone) {
      s.refusal = "in a template that declares integer variables (line " + std::to_string(LineOf(integer_decl_)) +
                  "), whose assignments evaluate values as arithmetic";
    } else {
      s.refusal = std::move(why);
    }
    return s;
  }

  void Lose(size_t pos, std::string why) {
    if (lost_ != kNone && lost_ <= pos) return;
    lost_ = pos;
    lost_why_ = std::move(why);
  }

  void CheckIntegerDeclarations() {
    static const std::regex re(R"((^|[\s;&|({])(declare|typeset|local|readonly|export)\s+(-[A-Za-z]*\s+)*-[A-Za-z]*i)");
    std::match_results<std::string_view::const_iterator> m;
    if (std::regex_search(t_.begin(), t_.end(), m, re)) integer_decl_ = static_cast<size_t>(m.position(0));
  }

  Frame& Code() {
    for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) {
      if (it->mode == Mode::kCode || it->mode == Mode::kArray) return *it;
    }
    return stack_.front();
  }

  // The place of the placeholder at `pos`, decided from the frames around it.
  void Place(size_t pos) {
    if (lost_ != kNone || integer_decl_ != kNone) {
      sites_.push_back(Refused(pos, ""));
      return;
    }
    Frame& top = stack_.back();
    switch (top.mode) {
      case Mode::kAnsi:
        return Refuse(pos, "inside $'...', whose escapes would change the value");
      case Mode::kBackquote:
        return Refuse(pos, "inside backquote command substitution");
      case Mode::kArith:
        return Refuse(pos, "inside arithmetic ($(( )), (( )) or $[ ]), which evaluates the value as code");
      case Mode::kParam:
        return Refuse(pos, "inside a ${...} expansion");
      default:
        break;
    }
    Frame& code = Code();
    if (code.word_begin == kNone) {
      code.word_begin = pos;
    }
    if (std::string why = PlaceRefusal(code, pos); !why.empty()) return Refuse(pos, why);
    bool data = PlainAssignment(code, pos);
    bool option = OptionValue(code, pos);
    if (top.mode == Mode::kSingle) return Accept(ShellContext::kSingle, data, option);
    if (pos > 0 && t_[pos - 1] == '$') return Refuse(pos, "right after '$', which would expand the value");
    if (top.mode == Mode::kDouble) return Accept(ShellContext::kDouble, data, option);
    // An unquoted word, or part of one.
    if (code.word_bracket) return Refuse(pos, "inside [ ] in a word (an array subscript is evaluated as arithmetic)");
    return Accept(ShellContext::kWord, data, option);
  }

  // Whether the placeholder at `pos` stands where its command reads no option: after `--`, right in
  // a long option's value (the word so far is --NAME=...), or after a prefix that is no option.
  bool OptionValue(const Frame& code, size_t pos) const {
    if (code.case_pattern || code.redirect_target || code.dbracket != kNone) return false;
    // Placeholders before it in the word count for nothing: their values may be empty.
    static const std::regex placeholder(R"(\{\{[^}]*\}\})");
    std::string prefix =
        std::regex_replace(StripQuotes(t_.substr(code.word_begin, pos - code.word_begin)), placeholder, "");
    static const std::regex long_option(R"(^--[A-Za-z0-9][A-Za-z0-9_.-]*=)");
    if (std::regex_search(prefix, long_option)) return true;
    // A variable's value is handed on as "$V", where the template no longer shows what reads it.
    if (IsAssignment(prefix)) return false;
    // After a prefix of its own (./{{v}}, out/{{v}}) the word cannot begin with '-'.
    if (!prefix.empty() && prefix[0] != '-') return true;
    return code.mode == Mode::kCode && prefix.empty() && OptionsEnded(code.words);
  }

  // A placeholder in an #SBATCH line: sbatch reads the line's words as its options, so the value
  // may only be a long option's value, never an option (`#SBATCH {{x}}` with --output=...).
  std::string DirectiveRefusal(size_t line_begin, size_t pos) const {
    size_t word = t_.find_last_of(" \t", pos == 0 ? 0 : pos - 1);
    word = word == kNone || word < line_begin ? line_begin : word + 1;
    std::string prefix(t_.substr(word, pos - word));
    static const std::regex value(R"(^--[A-Za-z][A-Za-z0-9_-]*=[^'"\\]*$)");
    if (std::regex_match(prefix, value)) return "";
    return "in an #SBATCH line but not as an option's value (write #SBATCH --NAME={{...}}): sbatch would read the "
           "value as an option of its own, which could move the job's log";
  }

  // Whether the placeholder at `pos` is in the value of a plain assignment: the command's words
  // so far are assignments (or just `export`), and its own word starts with NAME=.
  bool PlainAssignment(const Frame& code, size_t pos) const {
    if (code.mode != Mode::kCode || code.case_pattern || code.redirect_target || code.dbracket != kNone) return false;
    if (code.word_bracket) return false;
    std::string_view prefix = t_.substr(code.word_begin, pos - code.word_begin);
    static const std::regex name_eq(R"(^[A-Za-z_][A-Za-z0-9_]*=)");
    if (!std::regex_search(prefix.begin(), prefix.end(), name_eq)) return false;
    for (size_t k = 0; k < code.words.size(); ++k) {
      if (k == 0 && code.words[k] == "export") continue;
      if (!std::regex_search(code.words[k].begin(), code.words[k].end(), name_eq)) return false;
    }
    return true;
  }

  void Accept(ShellContext c, bool data_only = false, bool option_value = false) {
    PlaceholderSite s;
    s.context = c;
    s.data_only = data_only || c == ShellContext::kComment;
    s.option_value = option_value || c == ShellContext::kComment;
    sites_.push_back(s);
  }
  void Refuse(size_t pos, std::string why) { sites_.push_back(Refused(pos, std::move(why))); }

  // Why the command around the placeholder at `pos` would run or name code with its value, or "".
  std::string PlaceRefusal(const Frame& code, size_t pos) const {
    std::string_view prefix = t_.substr(code.word_begin, pos - code.word_begin);
    if (code.dbracket != kNone) {
      size_t end = t_.find("]]", pos);
      std::string_view test = t_.substr(code.dbracket, (end == kNone ? t_.size() : end) - code.dbracket);
      static const std::regex arith(R"(\s-(eq|ne|lt|le|gt|ge)\s)");
      if (std::regex_search(test.begin(), test.end(), arith)) {
        return "inside [[ ]] with an arithmetic comparison (-eq, -lt, ...), which evaluates its operands as code";
      }
      return "";
    }
    if (code.mode == Mode::kArray || code.case_pattern) return "";
    if (code.redirect_target) return "";
    return CommandRefusal(code.words, prefix, WordEndsHere());
  }

  // True when the word holding the current placeholder ends with it (past closing quotes).
  bool WordEndsHere() const {
    size_t end = holders_[next_].second;
    while (end < t_.size() && (t_[end] == '\'' || t_[end] == '"')) ++end;
    return end >= t_.size() || IsBlank(t_[end]) || t_[end] == '\n' || IsOperatorChar(t_[end]);
  }

  void StartWord(Frame& f, size_t i) {
    if (f.word_begin == kNone) f.word_begin = i;
  }

  void EndWord(Frame& f, size_t i) {
    if (f.word_begin == kNone) return;
    std::string word(t_.substr(f.word_begin, i - f.word_begin));
    size_t begin = f.word_begin;
    f.word_begin = kNone;
    f.word_bracket = false;
    if (f.redirect_target) {
      f.redirect_target = false;
      return;
    }
    if (f.mode == Mode::kArray) return;
    if (word == "]]" && f.dbracket != kNone) {
      f.dbracket = kNone;
      return;
    }
    if (f.dbracket != kNone) return;
    bool first = CommandPosition(f);
    if (f.case_pattern) {
      if (word == "esac") {
        f.case_pattern = false;
        --f.cases;
      }
      return;
    }
    f.words.push_back(word);
    if (first && word == "[[") f.dbracket = begin;
    if (first && word == "case") ++f.cases;
    if (first && word == "esac" && f.cases > 0) --f.cases;
    auto command = std::find_if(f.words.begin(), f.words.end(),
                                [](const std::string& w) { return !IsAssignment(w) && !IsReserved(StripQuotes(w)); });
    if (word == "in" && command != f.words.end() && StripQuotes(*command) == "case") {
      f.case_pattern = true;
      f.words.clear();
    }
  }

  // Whether the word just pushed would be the first (command) word of its command.
  bool CommandPosition(const Frame& f) const {
    for (const auto& w : f.words) {
      if (!IsAssignment(w) && !IsReserved(StripQuotes(w))) return false;
    }
    return true;
  }

  void EndCommand(Frame& f) {
    if (f.dbracket != kNone) return;  // && || ( ) inside [[ ]] do not end it
    f.words.clear();
    f.redirect_target = false;
  }

  size_t Step(size_t i) {
    Frame& f = stack_.back();
    char c = t_[i];
    char n = i + 1 < t_.size() ? t_[i + 1] : '\0';
    switch (f.mode) {
      case Mode::kSingle:
        if (c == '\'') stack_.pop_back();
        return i + 1;
      case Mode::kAnsi:
        if (c == '\\') return i + 2;
        if (c == '\'') stack_.pop_back();
        return i + 1;
      case Mode::kBackquote:
        if (c == '\\') return i + 2;
        if (c == '`') stack_.pop_back();
        return i + 1;
      case Mode::kParam:
        if (c == '\\') return i + 2;
        if (c == '\'' || c == '"' || c == '`' || (c == '$' && n == '(')) {
          Lose(i, "quotes or a substitution inside ${...}");
          return i + 1;
        }
        if (c == '{') ++f.depth;
        if (c == '}' && f.depth-- == 0) stack_.pop_back();
        return i + 1;
      case Mode::kArith:
        if (c == '\\') return i + 2;
        if (c == f.open) ++f.depth;
        if (c == f.close && --f.depth <= 0) stack_.pop_back();
        if (c == '\'' || c == '"' || c == '`') Lose(i, "quotes or backquotes inside arithmetic");
        if (c == '$' && (n == '(' || n == '{')) return OpenDollar(i);
        return i + 1;
      case Mode::kDouble:
        if (c == '\\') return i + 2;
        if (c == '"') {
          stack_.pop_back();
          return i + 1;
        }
        if (c == '`') {
          stack_.push_back(Open(Mode::kBackquote, i));
          return i + 1;
        }
        if (c == '$') return OpenDollar(i);
        return i + 1;
      case Mode::kCode:
      case Mode::kArray:
        return StepCode(f, i);
    }
    return i + 1;
  }

  // At a '$' in code or "...": $'...', $"...", $(( )), $( ), ${ }, $[ ], or a plain '$'.
  size_t OpenDollar(size_t i) {
    if (next_ < holders_.size() && holders_[next_].first == i + 1) return i + 1;  // ${{v}}: refused by Place
    std::string_view rest = t_.substr(i);
    bool in_double = stack_.back().mode == Mode::kDouble;
    if (rest.substr(0, 3) == "$((") {
      stack_.push_back(Open(Mode::kArith, i, false, 2));
      return i + 3;
    }
    if (rest.substr(0, 2) == "$(") {
      Frame f = Open(Mode::kCode, i, true);
      stack_.push_back(f);
      return i + 2;
    }
    if (rest.substr(0, 2) == "${") {
      stack_.push_back(Open(Mode::kParam, i));
      return i + 2;
    }
    if (rest.substr(0, 2) == "$[") {
      Frame f = Open(Mode::kArith, i, false, 1);
      f.open = '[';
      f.close = ']';
      stack_.push_back(f);
      return i + 2;
    }
    if (!in_double && rest.substr(0, 2) == "$'") {
      stack_.push_back(Open(Mode::kAnsi, i));
      return i + 2;
    }
    if (!in_double && rest.substr(0, 2) == "$\"") {
      stack_.push_back(Open(Mode::kDouble, i));
      return i + 2;
    }
    return i + 1;
  }

  size_t StepCode(Frame& f, size_t i) {
    char c = t_[i];
    char n = i + 1 < t_.size() ? t_[i + 1] : '\0';
    if (IsBlank(c)) {
      EndWord(f, i);
      return i + 1;
    }
    if (c == '\n') {
      EndWord(f, i);
      EndCommand(f);
      if (f.dbracket != kNone) Lose(i, "a [[ ]] test over several lines");
      if (!heredocs_.empty()) return ReadHeredocBodies(i + 1);
      return i + 1;
    }
    if (c == '\\') {
      if (n == '\n') return i + 2;  // line continuation
      StartWord(f, i);
      return i + 2;
    }
    if (c == '#' && f.word_begin == kNone) {
      size_t end = t_.find('\n', i);
      if (end == kNone) end = t_.size();
      size_t line_begin = i == 0 ? 0 : t_.rfind('\n', i - 1);
      line_begin = line_begin == kNone || i == 0 ? 0 : line_begin + 1;
      bool directive = t_.substr(i, 7) == "#SBATCH" && t_.find_first_not_of(" \t", line_begin) == i;
      while (next_ < holders_.size() && holders_[next_].first < end) {
        std::string why = directive ? DirectiveRefusal(i, holders_[next_].first) : "";
        if (lost_ != kNone) {
          sites_.push_back(Refused(holders_[next_].first, ""));
        } else if (!why.empty()) {
          Refuse(holders_[next_].first, why);
        } else {
          Accept(ShellContext::kComment);
        }
        ++next_;
      }
      return end;
    }
    if (c == '\'') {
      StartWord(f, i);
      stack_.push_back(Open(Mode::kSingle, i));
      return i + 1;
    }
    if (c == '"') {
      StartWord(f, i);
      stack_.push_back(Open(Mode::kDouble, i));
      return i + 1;
    }
    if (c == '`') {
      StartWord(f, i);
      stack_.push_back(Open(Mode::kBackquote, i));
      return i + 1;
    }
    if (c == '$') {
      StartWord(f, i);
      return OpenDollar(i);
    }
    if (c == '[') {
      bool whole = f.word_begin == kNone && (IsBlank(n) || n == '\n' || n == '[');
      StartWord(f, i);
      if (!whole && f.dbracket == kNone) f.word_bracket = true;
      return i + 1;
    }
    if (c == '(') {
      if (f.word_begin != kNone && i > 0 && t_[i - 1] == '=') {  // name=( ... )
        Frame a = Open(Mode::kArray, i, true);
        stack_.push_back(a);
        return i + 1;
      }
      EndWord(f, i);
      if (f.dbracket != kNone) return i + 1;
      if (f.case_pattern) return i + 1;
      if (n == '(' && CommandPosition(f) && f.mode == Mode::kCode) {
        stack_.push_back(Open(Mode::kArith, i, false, 2));
        return i + 2;
      }
      ++f.depth;
      EndCommand(f);
      return i + 1;
    }
    if (c == ')') {
      EndWord(f, i);
      if (f.dbracket != kNone) return i + 1;
      if (f.case_pattern && f.depth == 0) {
        f.case_pattern = false;
        EndCommand(f);
        return i + 1;
      }
      if (f.depth > 0) {
        --f.depth;
      } else if (f.closes_on_paren && stack_.size() > 1) {
        stack_.pop_back();
        return i + 1;
      }
      EndCommand(f);
      return i + 1;
    }
    if (c == '<' || c == '>') {
      EndWord(f, i);
      if ((n == '(') && f.dbracket == kNone) {  // process substitution <( ) >( )
        StartWord(f, i);
        Frame p = Open(Mode::kCode, i, true);
        stack_.push_back(p);
        return i + 2;
      }
      if (c == '<' && t_.substr(i, 3) == "<<<") {
        f.redirect_target = true;
        return i + 3;
      }
      if (c == '<' && n == '<') return ReadHeredocOperator(i);
      size_t j = i + 1;
      while (j < t_.size() && (t_[j] == '>' || t_[j] == '&' || t_[j] == '|')) ++j;
      // A file descriptor duplication (>&2) has no target word of its own.
      if (!(j > i + 1 && t_[j - 1] == '&' && j < t_.size() &&
            (std::isdigit(static_cast<unsigned char>(t_[j])) || t_[j] == '-'))) {
        f.redirect_target = f.dbracket == kNone;
      }
      return j;
    }
    if (c == ';' || c == '&' || c == '|') {
      EndWord(f, i);
      if (f.dbracket != kNone) return i + 1;
      if (f.case_pattern && c == '|') return i + 1;
      size_t j = i + 1;
      while (j < t_.size() && (t_[j] == ';' || t_[j] == '&' || t_[j] == '|')) ++j;
      EndCommand(f);
      if (c == ';' && (n == ';' || n == '&') && f.cases > 0) f.case_pattern = true;
      return j;
    }
    StartWord(f, i);
    return i + 1;
  }

  size_t ReadHeredocOperator(size_t i) {
    size_t j = i + 2;
    Heredoc h;
    if (j < t_.size() && t_[j] == '-') {
      h.strip_tabs = true;
      ++j;
    }
    while (j < t_.size() && IsBlank(t_[j])) ++j;
    while (j < t_.size() && std::string_view(" \t\n;&|<>()").find(t_[j]) == kNone) {
      if (next_ < holders_.size() && j == holders_[next_].first) {
        Refuse(j, "as a here-document's delimiter");
        Lose(j, "a here-document whose delimiter is a placeholder");
        j = holders_[next_++].second;
        continue;
      }
      char d = t_[j];
      if (d == '\'' || d == '"') {
        h.quoted = true;
        size_t close = t_.find(d, j + 1);
        if (close == kNone || t_.substr(j, close - j).find('\n') != kNone) {
          Lose(j, "a here-document delimiter it cannot read");
          return t_.size() > j ? j + 1 : j;
        }
        h.delimiter.append(t_.substr(j + 1, close - j - 1));
        j = close + 1;
      } else if (d == '\\' && j + 1 < t_.size()) {
        h.quoted = true;
        h.delimiter.push_back(t_[j + 1]);
        j += 2;
      } else if (d == '$' || d == '`') {
        Lose(j, "a here-document delimiter with an expansion");
        return j + 1;
      } else {
        h.delimiter.push_back(d);
        ++j;
      }
    }
    if (h.delimiter.empty()) {
      Lose(i, "a here-document operator without a delimiter");
    } else {
      heredocs_.push_back(h);
    }
    return j;
  }

  // Here-document bodies start on the line after their operator, one after the other.
  size_t ReadHeredocBodies(size_t i) {
    std::vector<Heredoc> docs;
    docs.swap(heredocs_);
    for (const Heredoc& h : docs) {
      // In an unquoted body, $( ), ${ }, $[ ] and backquotes are live: track them.
      std::vector<char> closers;
      bool backquote = false;
      bool lost = false;
      while (i < t_.size()) {
        size_t end = t_.find('\n', i);
        if (end == kNone) end = t_.size();
        std::string_view line = t_.substr(i, end - i);
        if (h.strip_tabs) line.remove_prefix(std::min(line.find_first_not_of('\t'), line.size()));
        bool last = line == h.delimiter;
        for (size_t k = i; k < end;) {
          while (next_ < holders_.size() && k > holders_[next_].first) {
            Refuse(holders_[next_].first, "right after a backslash in a here-document");
            ++next_;
          }
          if (next_ < holders_.size() && k == holders_[next_].first) {
            if (h.quoted) {
              AcceptHeredoc(h, ShellContext::kQuotedHeredoc);
            } else if (k > 0 && t_[k - 1] == '$') {
              Refuse(k, "right after '$' in a here-document, which would expand the value");
            } else if (lost || backquote || !closers.empty()) {
              Refuse(k, "inside an expansion ($( ), ${ }, backquotes) in a here-document");
            } else {
              AcceptHeredoc(h, ShellContext::kHeredoc);
            }
            k = holders_[next_++].second;
            continue;
          }
          char c = t_[k];
          if (h.quoted) {
            ++k;
            continue;
          }
          if (c == '\\') {
            k += 2;
            continue;
          }
          if (c == '`') {
            backquote = !backquote;
          } else if (c == '$' && next_ < holders_.size() && holders_[next_].first == k + 1) {
            // ${{v}}: refused above at the placeholder
          } else if (c == '$' && k + 1 < end && (t_[k + 1] == '(' || t_[k + 1] == '{' || t_[k + 1] == '[')) {
            closers.push_back(t_[k + 1] == '(' ? ')' : t_[k + 1] == '{' ? '}' : ']');
            ++k;
          } else if (!closers.empty()) {
            char want = closers.back();
            if ((want == ')' && c == '(') || (want == '}' && c == '{') || (want == ']' && c == '[')) {
              closers.push_back(want);
            } else if (c == want) {
              closers.pop_back();
            } else if (c == '\'' || c == '"') {
              lost = true;
            }
          }
          ++k;
        }
        i = std::min(end + 1, t_.size());
        if (last) break;
      }
      if (lost) Lose(i, "quotes inside an expansion in a here-document");
    }
    return i;
  }

  void AcceptHeredoc(const Heredoc& h, ShellContext c) {
    if (lost_ != kNone || integer_decl_ != kNone) {
      sites_.push_back(Refused(holders_[next_].first, ""));
      return;
    }
    PlaceholderSite s;
    s.context = c;
    s.delimiter = h.delimiter;
    s.strip_tabs = h.strip_tabs;
    sites_.push_back(s);
  }

  std::string_view t_;
  const std::vector<std::pair<size_t, size_t>>& holders_;
  size_t next_ = 0;
  std::vector<Frame> stack_;
  std::vector<Heredoc> heredocs_;
  std::vector<PlaceholderSite> sites_;
  size_t lost_ = kNone;  // from here on, the reader cannot follow the syntax
  std::string lost_why_;
  size_t integer_decl_ = kNone;
};

}  // namespace

std::vector<PlaceholderSite> AnalyzeShell(std::string_view tmpl,
                                          const std::vector<std::pair<size_t, size_t>>& holders) {
  return Reader(tmpl, holders).Run();
}

std::string_view ShellContextName(ShellContext context) {
  switch (context) {
    case ShellContext::kWord:
      return "an unquoted word";
    case ShellContext::kSingle:
      return "'...'";
    case ShellContext::kDouble:
      return "\"...\"";
    case ShellContext::kHeredoc:
      return "a here-document";
    case ShellContext::kQuotedHeredoc:
      return "a here-document with a quoted delimiter";
    case ShellContext::kComment:
      return "a comment";
    case ShellContext::kRefused:
      return "a place it cannot be quoted for";
  }
  return "";
}

}  // namespace sweep::slurm
