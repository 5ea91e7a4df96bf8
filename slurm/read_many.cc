// Reading many files' new bytes with one remote command; see ReadManyByCommand in transport.h.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "slurm/sbatch_script.h"
#include "slurm/transport.h"

namespace sweep::slurm {
namespace {

// `r PATH FROM MAX` prints "F LEN\n" and LEN bytes from byte FROM (1-based) of PATH, or "N 0\n"
// when PATH is not a regular file. Lengths come from the bytes actually copied, so a log that
// grows meanwhile cannot desynchronise the framing.
constexpr std::string_view kPrologue =
    "t=$(mktemp) || exit 97\n"
    "trap 'rm -f \"$t\"' EXIT\n"
    "r() { if [ -f \"$1\" ]; then tail -c +\"$2\" -- \"$1\" 2>/dev/null | head -c \"$3\" >\"$t\"; "
    "printf 'F %d\\n' \"$(($(wc -c <\"$t\")))\"; cat \"$t\"; else printf 'N 0\\n'; fi; }\n";

void ReadBatch(Transport& transport, const std::vector<ReadRequest>& requests, size_t begin, size_t end,
               std::vector<Result<std::string>>& out) {
  std::string cmd(kPrologue);
  for (size_t i = begin; i < end; ++i) {
    const ReadRequest& r = requests[i];
    cmd += fmt::format("r {} {} {}\n", ShellQuote(r.path), r.offset + 1, r.max_bytes);
  }
  auto fail = [&](const Status& st) {
    for (size_t i = out.size(); i < end; ++i) out.push_back(st);
  };
  auto ran = transport.Run(cmd);
  if (!ran.ok()) return fail(ran.status());
  if (ran->exit_code != 0) {
    return fail(Status::Unavailable(fmt::format("reading {} logs in one command: exit {}: {}", end - begin,
                                                ran->exit_code, ran->err.substr(0, 200))));
  }
  std::string_view rest = ran->out;
  for (size_t i = begin; i < end; ++i) {
    size_t nl = rest.find('\n');
    std::string_view head = rest.substr(0, nl);
    size_t len = 0;
    bool ok = nl != std::string_view::npos && head.size() > 2 && (head[0] == 'F' || head[0] == 'N') && head[1] == ' ';
    if (ok) {
      auto [p, ec] = std::from_chars(head.data() + 2, head.data() + head.size(), len);
      ok = ec == std::errc() && p == head.data() + head.size() && len <= rest.size() - nl - 1;
    }
    if (!ok) return fail(Status::Internal("unexpected output reading logs in one command"));
    rest.remove_prefix(nl + 1);
    if (head[0] == 'N') {
      out.push_back(Status::NotFound(fmt::format("{}: no such file", requests[i].path)));
    } else {
      out.push_back(std::string(rest.substr(0, len)));
      rest.remove_prefix(len);
    }
  }
}

}  // namespace

std::vector<Result<std::string>> ReadManyByCommand(Transport& transport, const std::vector<ReadRequest>& requests) {
  std::vector<Result<std::string>> out;
  out.reserve(requests.size());
  for (size_t b = 0; b < requests.size(); b += kReadManyBatch) {
    ReadBatch(transport, requests, b, std::min(requests.size(), b + kReadManyBatch), out);
  }
  return out;
}

}  // namespace sweep::slurm
