// Text for the HTML report: escaping of everything that comes from a study, its parameters or
// its logs, and the few number and duration formats the report shows.
// Internal to reports/ (scripts/include-loops.py checks that no other folder includes it);
// tests may include it.
// Module reports/: rendering plain data into reports; uses base/ only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sweep::reports {

// Escapes & < > " ' so the text is inert both between tags and inside a quoted attribute value.
std::string HtmlEscape(std::string_view text);
void AppendHtmlEscaped(std::string_view text, std::string& out);

// At most `max_chars` code points, with "…" when cut; never splits a UTF-8 sequence.
std::string Ellipsize(std::string_view text, size_t max_chars);

// "1.23", "12.3", "1234", "1.2e+06": `digits` significant digits, no exponent for everyday sizes.
std::string FormatSig(double value, int digits = 3);
// FormatSig, or "–" when there is no value.
std::string FormatSigOr(const std::optional<double>& value, int digits = 3);
// FormatSig for small numbers; "642k", "1.82M", "3.1G" above 10 000.
std::string FormatCompact(double value);
// "42 s", "3.5 min", "2.1 h", "4.0 d".
std::string FormatDuration(double seconds);
// "×1.70"
std::string FormatFactor(double factor);

}  // namespace sweep::reports
