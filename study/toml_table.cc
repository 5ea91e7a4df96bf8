// The shared TOML table reader; see toml_table.h.
#include "study/toml_table.h"

namespace sweep::study {

int LineOf(const toml::node& node) { return static_cast<int>(node.source().begin.line); }

}  // namespace sweep::study
