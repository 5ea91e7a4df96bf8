// SshTransport: the Transport from a workstation, over one libssh session: an exec channel per
// command, one SFTP session for files. The only file in slurmsweep that includes libssh.
//
// Failure model: any sign that the session is gone makes the call return kUnavailable and
// marks the session dead; the next call reconnects once (same options, same host key checks)
// and fails again if that does not work. A call never retries by itself: a command whose
// connection dropped may have run (sbatch twice is worse than a retry later).
#include <fcntl.h>
#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/sftp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/private_file.h"
#include "slurm/known_hosts.h"
#include "slurm/transport.h"

namespace sweep::slurm {
namespace {

// SFTP servers must accept 32 KiB of data per request; larger ones may be refused or cut.
constexpr size_t kSftpChunk = 32 * 1024;
constexpr size_t kReadChunk = 64 * 1024;
// How long one wait for output blocks before stderr is drained again.
constexpr int kPollMs = 100;
// libssh 0.10 has no client keepalive, so a link that dies silently would leave a command
// waiting forever. Slurm's clients answer in seconds; ten minutes means the link is gone.
constexpr auto kCommandTimeout = std::chrono::minutes(10);

struct SessionFree {
  void operator()(ssh_session s) const {
    ssh_disconnect(s);
    ssh_free(s);
  }
};
struct SftpFree {
  void operator()(sftp_session s) const { sftp_free(s); }
};
struct SftpFileClose {
  void operator()(sftp_file f) const { sftp_close(f); }
};
struct ChannelFree {
  void operator()(ssh_channel c) const { ssh_channel_free(c); }
};
struct KeyFree {
  void operator()(ssh_key k) const { ssh_key_free(k); }
};
using SessionPtr = std::unique_ptr<ssh_session_struct, SessionFree>;
using SftpPtr = std::unique_ptr<sftp_session_struct, SftpFree>;
using SftpFilePtr = std::unique_ptr<sftp_file_struct, SftpFileClose>;
using ChannelPtr = std::unique_ptr<ssh_channel_struct, ChannelFree>;
using KeyPtr = std::unique_ptr<ssh_key_struct, KeyFree>;

std::string ErrorText(ssh_session s) {
  const char* text = ssh_get_error(s);
  return text && *text ? text : "unknown libssh error";
}

// Single quotes survive every login shell (bash, zsh, tcsh, fish), so the command reaches
// /bin/sh exactly as written whatever the user's shell on the cluster is.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Commands can be whole scripts; error messages carry only their start.
std::string Abbreviate(const std::string& command) {
  constexpr size_t kMax = 60;
  return command.size() <= kMax ? command : command.substr(0, kMax) + "...";
}

// A command killed by a signal ends with an "exit-signal" naming it instead of an exit status.
void OnExitSignal(ssh_session, ssh_channel, const char* signal, int, const char*, const char*, void* userdata) {
  *static_cast<std::string*>(userdata) = signal ? signal : "";
}

// "KILL" -> 9; 0 if unknown.
int SignalNumber(const std::string& name) {
  for (int i = 1; i < NSIG; ++i) {
    const char* abbrev = sigabbrev_np(i);
    if (abbrev && name == abbrev) return i;
  }
  return 0;
}

std::string ServerFingerprint(ssh_session s) {
  ssh_key raw = nullptr;
  if (ssh_get_server_publickey(s, &raw) != SSH_OK) return "unavailable";
  KeyPtr key(raw);
  unsigned char* hash = nullptr;
  size_t len = 0;
  if (ssh_get_publickey_hash(key.get(), SSH_PUBLICKEY_HASH_SHA256, &hash, &len) != 0) return "unavailable";
  char* text = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, len);
  ssh_clean_pubkey_hash(&hash);
  std::string fingerprint = text ? text : "unavailable";  // already "SHA256:..."
  ssh_string_free_char(text);
  return fingerprint;
}

// The server's public key as known_hosts writes it: its type name and base64 blob.
std::pair<std::string, std::string> ServerKeyText(ssh_session s) {
  ssh_key raw = nullptr;
  if (ssh_get_server_publickey(s, &raw) != SSH_OK) return {};
  KeyPtr key(raw);
  char* b64 = nullptr;
  if (ssh_pki_export_pubkey_base64(key.get(), &b64) != SSH_OK) return {};
  std::string blob = b64;
  ssh_string_free_char(b64);
  const char* type = ssh_key_type_to_char(ssh_key_type(key.get()));
  return {type ? type : "", blob};
}

// The known_hosts files libssh consults: the one given, else the user's and the system's.
std::vector<std::string> KnownHostsFiles(const std::string& known_hosts_file) {
  if (!known_hosts_file.empty()) return {known_hosts_file};
  const char* home = std::getenv("HOME");
  std::vector<std::string> files;
  if (home && *home) files.push_back(std::string(home) + "/.ssh/known_hosts");
  files.push_back("/etc/ssh/ssh_known_hosts");
  return files;
}

// What libssh 0.10 skips (slurm/known_hosts.h): a key a @revoked line names is refused before any
// other check, so neither a plain line for it nor --accept-host-key lets it in; a host certificate
// is refused because libssh cannot verify it. `cert_authority` receives the @cert-authority lines
// that vouch for this host, for the message when the plain key is not known.
Status CheckKnownHostsMarkers(ssh_session s, const std::string& host, int port, const std::string& host_port,
                              const std::string& known_hosts_file, const std::string& fingerprint,
                              std::vector<std::string>* cert_authority) {
  auto [type, blob] = ServerKeyText(s);
  if (blob.empty()) return Status::FailedPrecondition("cannot read the host key of " + host_port + "; refusing");
  std::string name = KnownHostsName(host, port);
  for (const std::string& file : KnownHostsFiles(known_hosts_file)) {
    std::ifstream in(file, std::ios::binary);
    if (!in) continue;
    // At most 16 MiB, far beyond any known_hosts: a device cannot flood us.
    std::string text;
    char buf[64 * 1024];
    while (in && text.size() < (16u << 20)) {
      in.read(buf, sizeof buf);
      text.append(buf, static_cast<size_t>(in.gcount()));
    }
    KnownHostsMarkers m = ScanKnownHostsMarkers(text, file, name, type, blob);
    if (!m.revoked_at.empty()) {
      return Status::FailedPrecondition("host key for " + host_port + " (fingerprint " + fingerprint +
                                        ") is REVOKED by the @revoked line at " + m.revoked_at.front() +
                                        " — possible man-in-the-middle, or a retired key; refusing, as ssh does");
    }
    cert_authority->insert(cert_authority->end(), m.cert_authority_at.begin(), m.cert_authority_at.end());
  }
  if (type.find("-cert-v01@openssh.com") != std::string::npos) {
    return Status::FailedPrecondition(
        "the host " + host_port + " presents a host certificate (" + type +
        "), which the libssh 0.10 this slurmsweep uses cannot verify against a @cert-authority line; refusing. "
        "ssh(1) verifies certificates: reach the cluster through it");
  }
  return Status::OK();
}

// Only a key already in known_hosts passes: a tool that runs unattended for days must never
// trust on first use, and a changed key stops everything until a human looks.
// The one exception: the user names the fingerprint they verified out of band
// (--accept-host-key SHA256:...), and an UNKNOWN key with exactly that fingerprint is recorded.
Status VerifyHostKey(ssh_session s, const std::string& host, int port, const std::string& host_port,
                     const std::string& known_hosts_file, const std::string& accept_fingerprint) {
  std::string known_hosts = known_hosts_file.empty() ? "~/.ssh/known_hosts" : known_hosts_file;
  std::string fingerprint = ServerFingerprint(s);
  std::vector<std::string> cert_authority;
  SWEEP_RETURN_IF_ERROR(
      CheckKnownHostsMarkers(s, host, port, host_port, known_hosts_file, fingerprint, &cert_authority));
  int state = ssh_session_is_known_server(s);
  if (state == SSH_KNOWN_HOSTS_OK) return Status::OK();
  if (!cert_authority.empty()) {
    // The host's trust comes from a CA; recording or advising the plain key would replace the
    // CA's word with a first sight of the key.
    return Status::FailedPrecondition(
        "host key for " + host_port + " (fingerprint " + fingerprint + ") is vouched for only by the @cert-authority " +
        "line at " + cert_authority.front() + ", and the libssh 0.10 this slurmsweep uses cannot verify host " +
        "certificates; refusing (--accept-host-key does not apply). ssh(1) verifies certificates: reach the " +
        "cluster through it");
  }
  if ((state == SSH_KNOWN_HOSTS_UNKNOWN || state == SSH_KNOWN_HOSTS_NOT_FOUND) && !accept_fingerprint.empty()) {
    if (accept_fingerprint != fingerprint) {
      return Status::FailedPrecondition("host key for " + host_port + " has fingerprint " + fingerprint + ", not the " +
                                        accept_fingerprint + " you accepted; refusing");
    }
    if (ssh_session_update_known_hosts(s) != SSH_OK) {
      return Status::IOError("cannot record the host key of " + host_port + " in " + known_hosts + ": " + ErrorText(s));
    }
    return Status::OK();
  }
  switch (state) {
    case SSH_KNOWN_HOSTS_CHANGED:
      return Status::FailedPrecondition("host key for " + host_port + " has CHANGED (fingerprint " + fingerprint +
                                        ") — possible man-in-the-middle; refusing");
    case SSH_KNOWN_HOSTS_OTHER:
      return Status::FailedPrecondition("host key for " + host_port + " is of another type than the one in " +
                                        known_hosts + " (fingerprint " + fingerprint +
                                        ") — possible man-in-the-middle; refusing");
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
      return Status::FailedPrecondition("host key for " + host_port + " is not in " + known_hosts + " (fingerprint " +
                                        fingerprint + "); verify it out of band, then rerun with --accept-host-key " +
                                        fingerprint + " (or add it with ssh-keyscan or one ssh login)");
    default:
      return Status::FailedPrecondition("cannot check the host key for " + host_port + " against " + known_hosts +
                                        ": " + ErrorText(s));
  }
}

// The keys publickey_auto offers after the agent's: the IdentityFile lines of the ssh config
// (they come first) and the defaults, as ssh(1) would name them.
std::string AutoIdentities(ssh_session s) {
  char* first = nullptr;
  std::string text = "ssh-agent, then ";
  if (ssh_options_get(s, SSH_OPTIONS_IDENTITY, &first) == SSH_OK && first) {
    std::string path = first;
    if (path.rfind("%d/", 0) == 0) path = "~/.ssh/" + path.substr(3);
    text += path +
            (path.rfind("~/.ssh/id_", 0) == 0 ? " and the other default keys" : " (IdentityFile) and the default keys");
  } else {
    text += "the default keys";
  }
  ssh_string_free_char(first);
  return text;
}

Status Authenticate(ssh_session s, const SshOptions& o, const std::string& where) {
  int rc;
  std::string tried;
  if (!o.identity_file.empty()) {
    ssh_key raw = nullptr;
    // No passphrase callback: we run unattended. Encrypted keys belong in ssh-agent.
    if (ssh_pki_import_privkey_file(o.identity_file.c_str(), nullptr, nullptr, nullptr, &raw) != SSH_OK) {
      return Status::InvalidArgument("[cluster] identity_file: cannot load " + o.identity_file +
                                     " (missing, unreadable, or passphrase-protected: use ssh-agent for those)");
    }
    KeyPtr key(raw);
    rc = ssh_userauth_publickey(s, nullptr, key.get());
    tried = "identity file " + o.identity_file;
  } else {
    tried = AutoIdentities(s);
    rc = ssh_userauth_publickey_auto(s, nullptr, nullptr);
  }
  switch (rc) {
    case SSH_AUTH_SUCCESS:
      return Status::OK();
    case SSH_AUTH_PARTIAL:
      // The key was accepted; the server wants more (PAM asking a one-time code, usually).
      return Status::InvalidArgument(
          "public key authentication as " + where + " succeeded (" + tried +
          "), but the server accepted the key and asks for a second factor (" +
          ((ssh_userauth_list(s, nullptr) & SSH_AUTH_METHOD_INTERACTIVE) ? "keyboard-interactive" : "another method") +
          "): use transport = \"openssh\" with a ControlMaster (require_master = true; see docs/sites.md), "
          "or run on the login node");
    case SSH_AUTH_DENIED:
      return Status::InvalidArgument("public key authentication as " + where + " was refused (tried " + tried +
                                     "): check [cluster] user and identity_file");
    default:
      return Status::Unavailable("public key authentication as " + where + " failed: " + ErrorText(s));
  }
}

// "proxy command X" when the ssh config sends the connection through one (libssh 0.10 turns a
// ProxyJump into `ssh -W ... HOP`, which is how the hop is named); empty for a direct one.
std::string ProxyHop(ssh_session s) {
  char* proxy = nullptr;
  std::string hop;
  if (ssh_options_get(s, SSH_OPTIONS_PROXYCOMMAND, &proxy) == SSH_OK && proxy && *proxy) {
    hop = std::string("proxy command `") + proxy + "`";
  }
  ssh_string_free_char(proxy);
  return hop;
}

// The proxy's stderr goes to a file of ours, so that its own message (a bastion down, its host
// key unknown, no ssh on PATH) can be shown instead of libssh's "connection reset".
class ProxyStderr {
 public:
  explicit ProxyStderr(ssh_session s) {
    char* proxy = nullptr;
    if (ssh_options_get(s, SSH_OPTIONS_PROXYCOMMAND, &proxy) == SSH_OK && proxy && *proxy) {
      char name[] = "/tmp/slurmsweep-proxy-XXXXXX";
      int fd = ::mkstemp(name);
      if (fd >= 0) {
        ::close(fd);
        path_ = name;
        // libssh runs it with $SHELL -c, which may be tcsh or fish: hand it to /bin/sh in single quotes.
        std::string wrapped = "/bin/sh -c " + ShellQuote("exec 2>>" + ShellQuote(path_) + "; " + proxy);
        ssh_options_set(s, SSH_OPTIONS_PROXYCOMMAND, wrapped.c_str());
      }
    }
    ssh_string_free_char(proxy);
  }
  ~ProxyStderr() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  // Its last lines, on one line.
  std::string Text() const {
    if (path_.empty()) return "";
    std::string text, line;
    FILE* f = std::fopen(path_.c_str(), "r");
    if (!f) return "";
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) {
      line = buf;
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      if (!line.empty()) text += (text.empty() ? "" : " / ") + line;
    }
    std::fclose(f);
    return text.size() > 600 ? text.substr(text.size() - 600) : text;
  }

 private:
  std::string path_;
};

// A connected, verified, authenticated session. `where` receives "USER@HOST:PORT" as
// resolved after ~/.ssh/config.
Result<SessionPtr> OpenSession(const SshOptions& o, std::string* where) {
  SessionPtr session(ssh_new());
  if (!session) return Status::Internal("ssh_new failed");
  ssh_session s = session.get();

  if (ssh_options_set(s, SSH_OPTIONS_HOST, o.host.c_str()) != SSH_OK) {
    return Status::InvalidArgument("bad ssh host '" + o.host + "': " + ErrorText(s));
  }
  // 22 is the default, so ~/.ssh/config may override it as it would for ssh(1); any other
  // port was asked for and is set after the config so that it wins.
  int port = o.port;
  if (port == 22) ssh_options_set(s, SSH_OPTIONS_PORT, &port);
  if (o.process_ssh_config) {
    if (ssh_options_parse_config(s, o.ssh_config.empty() ? nullptr : o.ssh_config.c_str()) != SSH_OK) {
      return Status::InvalidArgument("cannot read ssh config: " + ErrorText(s));
    }
  } else {
    bool process = false;
    ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &process);
  }
  if (port != 22) ssh_options_set(s, SSH_OPTIONS_PORT, &port);
  if (!o.user.empty()) ssh_options_set(s, SSH_OPTIONS_USER, o.user.c_str());
  if (!o.known_hosts_file.empty()) {
    ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, o.known_hosts_file.c_str());
    // An explicit file is the whole truth: /etc/ssh/ssh_known_hosts must not vouch for a key.
    ssh_options_set(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null");
  }
  long timeout = o.connect_timeout_s;
  ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout);

  char* host = nullptr;
  std::string host_name = o.host;
  if (ssh_options_get(s, SSH_OPTIONS_HOST, &host) == SSH_OK) host_name = host;
  ssh_string_free_char(host);
  unsigned int resolved_port = static_cast<unsigned int>(port);
  ssh_options_get_port(s, &resolved_port);
  std::string host_port = host_name + ":" + std::to_string(resolved_port);

  std::string hop = ProxyHop(s);
  std::string via = hop.empty() ? "" : " via " + hop;
  ProxyStderr proxy_err(s);
  if (ssh_connect(s) != SSH_OK) {
    std::string said = proxy_err.Text();
    return Status::Unavailable("cannot connect to " + host_port + via + ": " + ErrorText(s) +
                               (said.empty() ? "" : "; the proxy said: " + said));
  }
  // The user name is only settled by ssh_connect (config, else the local user).
  char* user = nullptr;
  std::string user_name = o.user;
  if (ssh_options_get(s, SSH_OPTIONS_USER, &user) == SSH_OK) user_name = user;
  ssh_string_free_char(user);
  *where = user_name + "@" + host_port + via;

  SWEEP_RETURN_IF_ERROR(
      VerifyHostKey(s, host_name, static_cast<int>(resolved_port), host_port, o.known_hosts_file, o.accept_host_key));
  SWEEP_RETURN_IF_ERROR(Authenticate(s, o, *where));
  return session;
}

std::string SftpCodeText(int code) {
  switch (code) {
    case SSH_FX_EOF:
      return "end of file";
    case SSH_FX_NO_SUCH_FILE:
      return "no such file";
    case SSH_FX_PERMISSION_DENIED:
      return "permission denied";
    case SSH_FX_FAILURE:
      return "failure";
    case SSH_FX_BAD_MESSAGE:
      return "bad message";
    case SSH_FX_OP_UNSUPPORTED:
      return "operation unsupported";
    case SSH_FX_NO_SUCH_PATH:
      return "no such path";
    case SSH_FX_FILE_ALREADY_EXISTS:
      return "file already exists";
    case SSH_FX_WRITE_PROTECT:
      return "write-protected";
    case SSH_FX_NO_MEDIA:
      return "no media";
    default:
      return "SFTP error " + std::to_string(code);
  }
}

class SshTransport final : public Transport {
 public:
  static constexpr size_t kReadManyMin = 4;

  SshTransport(SshOptions options, SessionPtr session, std::string where)
      : options_(std::move(options)), where_(std::move(where)), session_(std::move(session)) {}

  Result<CommandOutput> Run(const std::string& command) override {
    SWEEP_RETURN_IF_ERROR(EnsureSession());
    std::string exit_signal;
    ssh_channel_callbacks_struct callbacks{};  // must outlive the channel: declared before it
    callbacks.size = sizeof(callbacks);
    callbacks.userdata = &exit_signal;
    callbacks.channel_exit_signal_function = OnExitSignal;
    ChannelPtr channel(ssh_channel_new(session_.get()));
    if (!channel || ssh_channel_open_session(channel.get()) != SSH_OK) return Lost("cannot open a channel");
    ssh_channel ch = channel.get();
    ssh_set_channel_callbacks(ch, &callbacks);
    std::string remote = "/bin/sh -c " + ShellQuote(command);
    if (ssh_channel_request_exec(ch, remote.c_str()) != SSH_OK) return Lost("cannot start " + Abbreviate(command));
    // No stdin: a command that reads it sees EOF at once instead of hanging.
    ssh_channel_send_eof(ch);

    CommandOutput result;
    std::string buf(kReadChunk, '\0');
    auto deadline = std::chrono::steady_clock::now() + kCommandTimeout;
    // stdout and stderr share one flow-control window: reading only stdout while stderr
    // fills would stall the server. So wait on stdout briefly, then drain stderr, in turn.
    while (!ssh_channel_is_eof(ch)) {
      int n = ssh_channel_read_timeout(ch, buf.data(), kReadChunk, 0, kPollMs);
      if (n < 0) return Lost("lost the connection while running " + Abbreviate(command));
      result.out.append(buf.data(), static_cast<size_t>(n));
      while ((n = ssh_channel_read_timeout(ch, buf.data(), kReadChunk, 1, 0)) > 0) {
        result.err.append(buf.data(), static_cast<size_t>(n));
      }
      if (n < 0 || SessionLost()) return Lost("lost the connection while running " + Abbreviate(command));
      if (std::chrono::steady_clock::now() > deadline) {
        return Lost(Abbreviate(command) + " did not finish within 10 minutes");
      }
    }
    result.exit_code = ssh_channel_get_exit_status(ch);
    if (result.exit_code < 0 && SessionLost()) return Lost("lost the connection while running " + Abbreviate(command));
    // Killed by signal N: 128+N, as a shell (and LocalTransport) reports it. -1 if the
    // server said nothing at all.
    if (int sig = SignalNumber(exit_signal); result.exit_code < 0 && sig > 0) result.exit_code = 128 + sig;
    ssh_channel_close(ch);
    return result;
  }

  Status WriteFile(const std::string& path, std::string_view content, int mode) override {
    auto sftp_or = Sftp();
    if (!sftp_or.ok()) return sftp_or.status();
    sftp_session sftp = *sftp_or;
    // A random name made with O_EXCL: nothing planted under a guessable name is written through.
    std::string tmp = path + ".tmp-" + RandomHexSuffix();
    auto abandon = [&](Status st) {
      if (!dead_) sftp_unlink(sftp, tmp.c_str());
      // A missing parent directory is the caller's setup problem, not a missing file to poll.
      return st.IsNotFound() ? Status::IOError(st.message()) : st;
    };

    // 0600 until written: nobody runs or reads a half-written script.
    SftpFilePtr file(sftp_open(sftp, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600));
    if (!file) return abandon(SftpFailure("cannot create", tmp));
    for (size_t done = 0; done < content.size();) {
      size_t want = std::min(kSftpChunk, content.size() - done);
      ssize_t n = sftp_write(file.get(), content.data() + done, want);
      if (n <= 0) return abandon(SftpFailure("cannot write", tmp));
      done += static_cast<size_t>(n);
    }
    if (sftp_close(file.release()) != SSH_OK) return abandon(SftpFailure("cannot write", tmp));
    // chmod after open: the server's umask applies to the open() mode.
    if (sftp_chmod(sftp, tmp.c_str(), static_cast<mode_t>(mode)) != 0) return abandon(SftpFailure("cannot chmod", tmp));
    if (sftp_rename(sftp, tmp.c_str(), path.c_str()) != 0) {
      // OpenSSH's SFTP rename refuses an existing target, and libssh 0.10 has no call for
      // posix-rename@openssh.com. Unlink and retry: a reader may find the file missing for
      // that instant, never half-written.
      if (SessionLost()) return Lost("cannot rename " + tmp);
      if (sftp_unlink(sftp, path.c_str()) != 0 && sftp_get_error(sftp) != SSH_FX_NO_SUCH_FILE) {
        return abandon(SftpFailure("cannot replace", path));
      }
      if (sftp_rename(sftp, tmp.c_str(), path.c_str()) != 0) return abandon(SftpFailure("cannot rename to", path));
    }
    return Status::OK();
  }

  Result<std::string> ReadFrom(const std::string& path, uint64_t offset, size_t max_bytes) override {
    auto sftp_or = Sftp();
    if (!sftp_or.ok()) return sftp_or.status();
    SftpFilePtr file(sftp_open(*sftp_or, path.c_str(), O_RDONLY, 0));
    if (!file) return SftpFailure("cannot open", path);
    if (sftp_seek64(file.get(), offset) != 0) return SftpFailure("cannot seek in", path);
    std::string data;
    // Grown chunk by chunk: max_bytes may be far larger than the file. A short read is not
    // the end (servers cap replies); only 0 is.
    while (data.size() < max_bytes) {
      size_t have = data.size();
      size_t want = std::min(kSftpChunk, max_bytes - have);
      data.resize(have + want);
      ssize_t n = sftp_read(file.get(), data.data() + have, want);
      if (n < 0) return SftpFailure("cannot read", path);
      data.resize(have + static_cast<size_t>(n));
      if (n == 0) break;
    }
    data.shrink_to_fit();  // the chunks' capacity, not the read's, otherwise (transport_local.cc)
    return data;
  }

  // Each SFTP read costs an open, reads and a close, each a round trip: from a few logs on, one
  // command that prints them all is cheaper.
  std::vector<Result<std::string>> ReadMany(const std::vector<ReadRequest>& requests) override {
    if (requests.size() < kReadManyMin) return Transport::ReadMany(requests);
    return ReadManyByCommand(*this, requests);
  }
  size_t ReadManyCalls(size_t n) const override {
    return n < kReadManyMin ? n : (n + kReadManyBatch - 1) / kReadManyBatch;
  }

  std::string Describe() const override { return "ssh " + where_; }

 private:
  // Reconnects once if an earlier call found the session dead. The dead session is freed
  // here, not where it died, because channels and files of that call still pointed into it.
  Status EnsureSession() {
    if (session_ && !dead_) return Status::OK();
    sftp_.reset();
    session_.reset();
    dead_ = false;
    std::string where;
    auto session = OpenSession(options_, &where);
    if (!session.ok() && session.status().code() == Status::Code::kInvalidArgument) {
      // The same settings logged in before: a refusal now (a second factor switched on, a key
      // revoked) is a login only a human can give, not a bad study file.
      return Status::Unavailable("reconnecting to " + where_ + ": " + session.status().message())
          .WithCause(Status::Cause::kReauthNeeded);
    }
    if (!session.ok()) return session.status().WithContext("reconnecting to " + where_);
    session_ = std::move(session).value();
    where_ = where;
    return Status::OK();
  }

  // Opened on first use: runs that only call commands never start an SFTP subsystem.
  Result<sftp_session> Sftp() {
    SWEEP_RETURN_IF_ERROR(EnsureSession());
    if (sftp_) return sftp_.get();
    SftpPtr sftp(sftp_new(session_.get()));
    if (!sftp) return Lost("cannot open an SFTP channel");
    if (sftp_init(sftp.get()) != SSH_OK) {
      if (SessionLost()) return Lost("cannot start SFTP");
      return Status::FailedPrecondition(
          where_ + ": cannot start SFTP (is the sftp subsystem enabled?): " + ErrorText(session_.get()));
    }
    sftp_ = std::move(sftp);
    return sftp_.get();
  }

  bool SessionLost() const {
    return !ssh_is_connected(session_.get()) || (ssh_get_status(session_.get()) & (SSH_CLOSED | SSH_CLOSED_ERROR));
  }

  Status Lost(const std::string& what) {
    dead_ = true;
    return Status::Unavailable(where_ + ": " + what + ": " + ErrorText(session_.get()) +
                               " (will reconnect on the next call)");
  }

  // Classifies a failed SFTP call: a dead link is kUnavailable, a missing file kNotFound.
  Status SftpFailure(const std::string& what, const std::string& path) {
    if (SessionLost()) return Lost(what + " " + path);
    int code = sftp_get_error(sftp_.get());
    std::string msg = where_ + ": " + what + " " + path + ": " + SftpCodeText(code);
    if (code == SSH_FX_NO_SUCH_FILE || code == SSH_FX_NO_SUCH_PATH) return Status::NotFound(msg);
    return Status::IOError(msg);
  }

  SshOptions options_;
  std::string where_;
  SessionPtr session_;
  SftpPtr sftp_;  // after session_: destroyed first, as libssh requires
  bool dead_ = false;
};

}  // namespace

Result<std::unique_ptr<Transport>> ConnectSsh(const SshOptions& options) {
  std::string where = options.user + "@" + options.host + ":" + std::to_string(options.port);
  auto session = OpenSession(options, &where);
  if (!session.ok()) return session.status();
  return std::unique_ptr<Transport>(
      std::make_unique<SshTransport>(options, std::move(session).value(), std::move(where)));
}

}  // namespace sweep::slurm
