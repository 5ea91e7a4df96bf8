// Tests of the documents a user reads: the study-file reference lists exactly the keys the loader
// accepts, every relative link between the documents leads somewhere, and no line or README runs long.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "study/keys.h"
#include "study/loader.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using namespace sweep;

namespace {

const fs::path kSource = SLURMSWEEP_SOURCE_DIR;

// The documents the checks cover, relative to the source tree.
std::vector<std::string> Documents() {
  std::vector<std::string> docs = {"README.md", "bench/README.md", "tests/cluster/README.md"};
  for (const auto& e : fs::directory_iterator(kSource / "docs")) {
    if (e.path().extension() == ".md") docs.push_back("docs/" + e.path().filename().string());
  }
  return docs;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines outside fenced code blocks, with their numbers (from 1).
std::vector<std::pair<int, std::string>> ProseLines(const std::string& text) {
  std::vector<std::pair<int, std::string>> out;
  bool code = false;
  int n = 0;
  for (const std::string& line : Lines(text)) {
    ++n;
    if (line.rfind("```", 0) == 0) {
      code = !code;
      continue;
    }
    if (!code) out.emplace_back(n, line);
  }
  return out;
}

// Characters, not bytes: UTF-8 continuation bytes do not count.
size_t Width(const std::string& line) {
  size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens; a repeated
// heading gets -1, -2, ...
std::set<std::string> Anchors(const std::string& text) {
  std::set<std::string> anchors;
  std::map<std::string, int> seen;
  static const std::regex heading(R"(^#{1,6}\s+(.*?)\s*#*\s*$)");
  for (const auto& [n, line] : ProseLines(text)) {
    std::smatch m;
    if (!std::regex_match(line, m, heading)) continue;
    std::string slug;
    for (unsigned char c : m[1].str()) {
      if (std::isalnum(c) || c == '-' || c == '_' || c >= 0x80) {
        slug += static_cast<char>(std::tolower(c));
      } else if (c == ' ') {
        slug += '-';
      }
    }
    int k = seen[slug]++;
    anchors.insert(k == 0 ? slug : fmt::format("{}-{}", slug, k));
  }
  return anchors;
}

// Inline code spans hold examples, not links.
std::string WithoutCode(const std::string& line) { return std::regex_replace(line, std::regex("`[^`]*`"), "``"); }

struct Link {
  std::string doc;
  int line;
  std::string target;
};

std::vector<Link> RelativeLinks(const std::string& doc, const std::string& text) {
  std::vector<Link> links;
  static const std::regex link(R"(\]\(([^)\s]+)\))");
  for (const auto& [n, line] : ProseLines(text)) {
    std::string prose = WithoutCode(line);
    for (std::sregex_iterator it(prose.begin(), prose.end(), link), end; it != end; ++it) {
      std::string target = (*it)[1];
      if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
      links.push_back({doc, n, target});
    }
  }
  return links;
}

// Why the link does not resolve, or "" when it does: the file (or folder) must exist inside the
// tree, and an anchor must name a heading of the Markdown file it points into.
std::string Broken(const Link& l) {
  std::string file = l.target.substr(0, l.target.find('#'));
  std::string anchor = l.target.find('#') == std::string::npos ? "" : l.target.substr(l.target.find('#') + 1);
  fs::path path = file.empty() ? kSource / l.doc : (kSource / l.doc).parent_path() / file;
  path = path.lexically_normal();
  auto rel = path.lexically_relative(kSource).string();
  if (rel.empty() || rel.rfind("..", 0) == 0) return "leads outside the source tree";
  if (!fs::exists(path)) return fmt::format("{} does not exist", rel);
  if (anchor.empty()) return "";
  if (path.extension() != ".md") return fmt::format("an anchor into {}, which is not Markdown", rel);
  if (!Anchors(testing::ReadAll(path.string())).count(anchor)) return fmt::format("{} has no heading #{}", rel, anchor);
  return "";
}

// The keys docs/study-file.md documents, dotted as study::KnownKeys() writes them: a heading
// "`[table]`" documents the table and opens it, and each "- `key`" (or "- `a`, `b`: ...") under it
// documents table.key; NAME (a name the study chooses) is written "*".
std::set<std::string> DocumentedKeys(const std::string& text) {
  std::set<std::string> keys;
  static const std::regex table_heading(R"(^#{2,6}\s+`\[\[?([A-Za-z_.]+)\]\]?`\s*$)");
  static const std::regex other_heading(R"(^#{1,6}\s)");
  static const std::regex item(R"(^- ((?:`[A-Za-z_.]+`(?:, )?)+))");
  static const std::regex code(R"(`([A-Za-z_.]+)`)");
  auto dotted = [](std::string key) {
    std::string out;
    std::istringstream in(key);
    for (std::string part; std::getline(in, part, '.');)
      out += (out.empty() ? "" : ".") + (part == "NAME" ? "*" : part);
    return out;
  };
  std::string table;
  bool in_table = false;
  for (const auto& [n, line] : ProseLines(text)) {
    std::smatch m;
    if (std::regex_match(line, m, table_heading)) {
      table = m[1];
      in_table = true;
      keys.insert(table);
    } else if (std::regex_search(line, other_heading)) {
      in_table = false;
    } else if (in_table && std::regex_search(line, m, item)) {
      std::string list = m[1];
      for (std::sregex_iterator it(list.begin(), list.end(), code), end; it != end; ++it) {
        keys.insert(table + "." + dotted((*it)[1]));
      }
    }
  }
  return keys;
}

// A study that loads, to which one key at a time is added.
constexpr const char* kBaseStudy = R"([study]
name = "docs"
[cluster]
transport = "local"
workdir = "/tmp/x"
[job]
template = "job.sbatch"
[stopping]
target_loss = 1.0
[space]
lr = [0.1, 0.01]
)";

// Adds `key` (dotted, "*" a name the study chooses) to the base study, as a table when the
// reference lists keys under it (`is_table`), else as the number 1: a wrong type gets a value
// error, and only an unknown key gets "unknown key". Returns the loader's error, or "".
std::string LoadWith(const testing::TempDir& dir, const std::string& key, bool is_table) {
  toml::table root = toml::parse(kBaseStudy);
  std::vector<std::string> parts;
  std::istringstream in(key);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part == "*" ? "zz" : part);
  if (parts.size() >= 2 && parts[0] == "search" && parts[1].rfind("enqueue", 0) == 0) {
    // An array of tables: one configuration of the base parameter ("*": a [space] parameter, so
    // lr itself), with the key beside it when the key names another.
    toml::table config{{"lr", 0.1}};
    if (parts.size() > 2 && parts[2] != "zz") config.insert_or_assign(parts[2], 1);
    if (!root.get("search")) root.insert_or_assign("search", toml::table{});
    root["search"].as_table()->insert_or_assign(parts[1], toml::array{config});
  } else {
    toml::table* t = &root;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (!t->get(parts[i])) t->insert_or_assign(parts[i], toml::table{});
      t = t->get(parts[i])->as_table();
      REQUIRE(t);
    }
    // A parameter's `text`, `option` or `path` declares a list of values; alone it would be a range's
    // unknown key.
    auto declares = [&](const char* word) { return parts.back().rfind(word, 0) == 0; };
    if (parts.size() == 3 && parts[0] == "space" && (declares("text") || declares("option") || declares("path"))) {
      t->insert_or_assign("values", toml::array{"a"});
    }
    if (!t->get(parts.back()) || !is_table) {
      if (is_table) {
        t->insert_or_assign(parts.back(), toml::table{});
      } else {
        t->insert_or_assign(parts.back(), 1);
      }
    }
  }
  std::ostringstream text;
  text << root;
  auto s = study::ParseStudy(text.str(), dir.file("study.toml"));
  return s.ok() ? "" : s.status().message();
}

}  // namespace

TEST_CASE("docs: the study-file reference lists exactly the keys the loader accepts", "[docs]") {
  std::set<std::string> documented = DocumentedKeys(testing::ReadAll((kSource / "docs/study-file.md").string()));
  std::vector<std::string> known_list = study::KnownKeys();
  std::set<std::string> known(known_list.begin(), known_list.end());
  REQUIRE(known.size() > 100);
  for (const std::string& k : known) {
    INFO("accepted by the loader (study/keys.h) but not in docs/study-file.md: " << k);
    CHECK(documented.count(k));
  }
  for (const std::string& k : documented) {
    INFO("in docs/study-file.md but not a key the loader knows (study/keys.h): " << k);
    CHECK(known.count(k));
  }
}

TEST_CASE("docs: every key of the study-file reference is accepted by the loader, and a misspelt one is not",
          "[docs]") {
  testing::TempDir dir;
  testing::WriteAll(dir.file("job.sbatch"), "#!/bin/bash\ntrain --lr {{lr}}\n");
  REQUIRE(LoadWith(dir, "study.name", false).find("unknown key") == std::string::npos);
  REQUIRE(study::ParseStudy(kBaseStudy, dir.file("study.toml")).ok());

  std::set<std::string> documented = DocumentedKeys(testing::ReadAll((kSource / "docs/study-file.md").string()));
  REQUIRE(documented.size() > 100);
  for (const std::string& key : documented) {
    bool is_table = false;
    for (const std::string& other : documented) is_table |= other.rfind(key + ".", 0) == 0;
    INFO("key " << key);
    std::string error = LoadWith(dir, key, is_table);
    CHECK(error.find("unknown key") == std::string::npos);
    // The same key misspelt is refused by name: the loader reached this table's check.
    if (key.back() != '*') {
      std::string misspelt = key + "_x";
      std::string shown = std::regex_replace(misspelt, std::regex(R"(\*)"), "zz");
      INFO("misspelt as " << shown << ": " << LoadWith(dir, misspelt, false));
      CHECK_THAT(LoadWith(dir, misspelt, false), Catch::Contains(fmt::format("unknown key '{}'", shown)));
    }
  }
}

TEST_CASE("docs: every relative link between the documents resolves, anchors to a heading", "[docs]") {
  size_t links = 0;
  for (const std::string& doc : Documents()) {
    for (const Link& l : RelativeLinks(doc, testing::ReadAll((kSource / doc).string()))) {
      ++links;
      INFO(l.doc << ":" << l.line << ": (" << l.target << ")");
      CHECK(Broken(l) == "");
    }
  }
  CHECK(links > 30);
}

TEST_CASE("docs: no line over 200 characters, and README.md is at most 200 lines", "[docs]") {
  for (const std::string& doc : Documents()) {
    std::vector<std::string> lines = Lines(testing::ReadAll((kSource / doc).string()));
    for (size_t i = 0; i < lines.size(); ++i) {
      INFO(doc << ":" << i + 1 << " has " << Width(lines[i]) << " characters");
      CHECK(Width(lines[i]) <= 200);
    }
    if (doc == "README.md") CHECK(lines.size() <= 200);
  }
}

TEST_CASE("docs: the checks see what they check (a heading's anchor, a long line, a documented key)", "[docs]") {
  CHECK(Anchors("# A title\n## Telemetry: `[job] monitor = true`\n## A title\n") ==
        std::set<std::string>{"a-title", "telemetry-job-monitor--true", "a-title-1"});
  CHECK(Anchors("```\n# not a heading\n```\n").empty());
  CHECK(Width("\xc3\x97") == 1);  // "×": one character, two bytes
  CHECK(DocumentedKeys("## `[space]`\n- `NAME.min`: x\n## Other\n- `not_a_key`\n") ==
        std::set<std::string>{"space", "space.*.min"});
  CHECK(DocumentedKeys("## `[cluster]`\n- `partition`, `account`: x\n") ==
        std::set<std::string>{"cluster", "cluster.partition", "cluster.account"});
  CHECK(Broken({"README.md", 1, "docs/no-such-page.md"}) != "");
  CHECK(Broken({"README.md", 1, "docs/study-file.md#no-such-heading"}) != "");
  CHECK(Broken({"README.md", 1, "../outside.md"}) != "");
  CHECK(Broken({"docs/running.md", 1, "study-file.md#cluster"}) == "");
}
