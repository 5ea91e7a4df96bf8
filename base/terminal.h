// Text that reaches a terminal: study values and log text may hold escape sequences or line
// breaks; printed raw they would drive the terminal or split a table row.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace sweep {

// `text` with every control character written visibly: \n \r \t, \e for ESC, \xNN for the other
// C0 bytes and DEL, \u{NN} for the C1 controls (U+0080..U+009F). For one value in a table cell.
std::string TerminalSafe(std::string_view text);

// While alive, everything written to `out` has its control characters but line breaks and tabs
// written as TerminalSafe does: no escape sequence from a value reaches the terminal.
class TerminalGuard {
 public:
  explicit TerminalGuard(std::ostream& out);
  ~TerminalGuard();
  TerminalGuard(const TerminalGuard&) = delete;
  TerminalGuard& operator=(const TerminalGuard&) = delete;
  // The stream's own buffer, unfiltered: for the cursor movements of a display that redraws in
  // place (cli/status_view.h), never for text.
  std::streambuf* raw() const { return original_; }

 private:
  class Filter : public std::streambuf {
   public:
    explicit Filter(std::streambuf* sink) : sink_(sink) {}

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override { return sink_->pubsync(); }

   private:
    bool Put(unsigned char c);
    std::streambuf* sink_;
    bool c2_ = false;  // the previous byte was 0xC2 (a C1 control may follow), held back
  };
  std::ostream& out_;
  std::streambuf* original_;
  Filter filter_;
};

}  // namespace sweep
