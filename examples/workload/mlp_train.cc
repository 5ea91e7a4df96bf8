// Stand-in training job for slurmsweep's quickstart and integration tests: a real MLP trained on
// the CPU whose Megatron-LM style logs, timing, divergence and signal handling behave like a GPU
// training run's, so the orchestrator can be exercised end to end without GPUs.

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

// Each sample is a sequence of tokens and the MLP runs position-wise, like a Transformer's
// feed-forward block: a sample then costs as much as a real one relative to the model (6 * params
// * tokens FLOPs), so iterations take milliseconds, while the per-token problem stays small
// enough for optimizer and learning-rate choices to matter.
constexpr int kSeqLength = 64;
constexpr int kTokenDim = 32;
// Features are stored as int8 (2 KB a sample) and scaled to unit variance when read.
constexpr float kFeatureScale = 1.0f / 73.9f;
constexpr int kTeacherWidth = 16;
// Fixed, independent of --seed, so every trial of a sweep is scored on the same task.
constexpr std::uint64_t kDataSeed = 20240903;
constexpr int kValidationSize = 256;  // sequences
constexpr double kLabelNoise = 0.1;
constexpr double kDivergenceLoss = 1e6;

constexpr int kExitUsage = 2;
constexpr int kExitInjectedFailure = 3;
constexpr int kExitDiverged = 4;
constexpr int kExitSigterm = 143;
constexpr int kExitSigint = 130;

volatile std::sig_atomic_t g_signal = 0;

void OnSignal(int sig) {
  if (g_signal == 0) g_signal = sig;
}

// Own distributions rather than std::normal_distribution etc., whose output is
// implementation-defined: the same --seed must give the same run with any standard library.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : gen_(seed) {}
  double Uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(1.0 - Uniform()));
    const double theta = 2.0 * 3.14159265358979323846 * Uniform();
    spare_ = r * std::sin(theta);
    has_spare_ = true;
    return r * std::cos(theta);
  }
  std::uint64_t Bits() { return gen_(); }
  std::size_t Below(std::size_t n) { return static_cast<std::size_t>(gen_() % n); }

 private:
  std::mt19937_64 gen_;
  bool has_spare_ = false;
  double spare_ = 0;
};

enum class Optimizer { kSgd, kMomentum, kAdam };

const char* OptimizerName(Optimizer o) {
  switch (o) {
    case Optimizer::kSgd:
      return "sgd";
    case Optimizer::kMomentum:
      return "momentum";
    case Optimizer::kAdam:
      return "adam";
  }
  return "?";
}

struct Config {
  std::int64_t micro_batch_size = 16;
  double lr = 0.01;
  Optimizer optimizer = Optimizer::kAdam;
  std::int64_t hidden = 32;
  std::int64_t train_iters = 200;
  std::int64_t log_interval = 1;
  std::uint64_t seed = 1234;
  std::int64_t sleep_ms = 0;
  std::int64_t fail_at_iter = 0;
  std::int64_t data_size = 4096;
  std::string checkpoint;  // empty: no checkpointing
};

constexpr const char* kUsage =
    "usage: mlp_train [--name value]...\n"
    "  --micro-batch-size N   sequences per iteration (default 16)\n"
    "  --lr X                 learning rate, constant (default 0.01)\n"
    "  --optimizer NAME       sgd | momentum | adam (default adam)\n"
    "  --hidden N             width of both hidden layers (default 32)\n"
    "  --train-iters N        iterations to run (default 200)\n"
    "  --log-interval N       iterations per log line (default 1)\n"
    "  --seed N               initialisation and batch-order seed (default 1234)\n"
    "  --sleep-ms N           extra delay per iteration, to lengthen runs (default 0)\n"
    "  --fail-at-iter N       exit 3 on reaching iteration N; 0 = never (default 0)\n"
    "  --checkpoint PATH      resume from PATH if it exists; save to it on SIGUSR1/SIGTERM\n"
    "  --data-size N          training sequences (default 4096)\n"
    "exit codes: 0 done or checkpoint requested (SIGUSR1), 2 bad arguments, 3 injected\n"
    "failure, 4 diverged, 130 SIGINT, 143 SIGTERM\n";

[[gnu::format(printf, 1, 2)]] std::string Format(const char* fmt, ...) {
  char buf[512];
  std::va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

[[noreturn]] void UsageError(const std::string& message) {
  std::fprintf(stderr, "mlp_train: %s\n%s", message.c_str(), kUsage);
  std::exit(kExitUsage);
}

template <typename T>
T ParseNumber(std::string_view flag, std::string_view text, T min, T max) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !(value >= min && value <= max)) {
    auto show = [&](T v) {
      if constexpr (std::is_floating_point_v<T>) return Format("%g", static_cast<double>(v));
      else return std::to_string(v);
    };
    UsageError("invalid value '" + std::string(text) + "' for " + std::string(flag) + " (expected a number in [" +
               show(min) + ", " + show(max) + "])");
  }
  return value;
}

Config ParseArgs(int argc, char** argv) {
  Config c;
  constexpr std::int64_t kBig = std::int64_t{1} << 40;
  const std::vector<std::pair<std::string_view, std::function<void(std::string_view)>>> flags = {
      {"--micro-batch-size",
       [&](std::string_view v) {
         c.micro_batch_size = ParseNumber<std::int64_t>("--micro-batch-size", v, 1, 1 << 16);
       }},
      {"--lr", [&](std::string_view v) { c.lr = ParseNumber<double>("--lr", v, 1e-12, 1e12); }},
      {"--optimizer",
       [&](std::string_view v) {
         if (v == "sgd") c.optimizer = Optimizer::kSgd;
         else if (v == "momentum") c.optimizer = Optimizer::kMomentum;
         else if (v == "adam") c.optimizer = Optimizer::kAdam;
         else UsageError("invalid value '" + std::string(v) + "' for --optimizer (expected sgd, momentum or adam)");
       }},
      {"--hidden", [&](std::string_view v) { c.hidden = ParseNumber<std::int64_t>("--hidden", v, 1, 4096); }},
      {"--train-iters",
       [&](std::string_view v) { c.train_iters = ParseNumber<std::int64_t>("--train-iters", v, 1, kBig); }},
      {"--log-interval",
       [&](std::string_view v) { c.log_interval = ParseNumber<std::int64_t>("--log-interval", v, 1, kBig); }},
      {"--seed", [&](std::string_view v) { c.seed = ParseNumber<std::uint64_t>("--seed", v, 0, UINT64_MAX); }},
      {"--sleep-ms",
       [&](std::string_view v) { c.sleep_ms = ParseNumber<std::int64_t>("--sleep-ms", v, 0, 3600 * 1000); }},
      {"--fail-at-iter",
       [&](std::string_view v) { c.fail_at_iter = ParseNumber<std::int64_t>("--fail-at-iter", v, 0, kBig); }},
      {"--checkpoint", [&](std::string_view v) { c.checkpoint = std::string(v); }},
      {"--data-size",
       [&](std::string_view v) {
         // Capped so a typo cannot ask for more memory than a test node has (~2.3 KB a sample).
         c.data_size = ParseNumber<std::int64_t>("--data-size", v, 1, 1 << 18);
       }},
  };
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    const auto it = std::find_if(flags.begin(), flags.end(), [&](const auto& f) { return f.first == arg; });
    if (it == flags.end()) {
      UsageError("unknown argument '" + std::string(arg) + "'" +
                 (arg.find('=') != std::string_view::npos ? " (use '--name value', not '=')" : ""));
    }
    if (i + 1 >= argc) UsageError("missing value for " + std::string(arg));
    it->second(argv[++i]);
  }
  return c;
}

void Emit(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  // Slurm writes stdout to a file the orchestrator tails; without this it would see nothing
  // until a 4 KB buffer filled.
  std::fflush(stdout);
}

std::string Timestamp() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  return buf;
}

// printf spells non-finite values "NAN"/"INF" under %E; Megatron (Python) prints nan/inf.
std::string Sci(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return Format("%.6E", v);
}

std::string Fixed3(double v) {
  if (!std::isfinite(v)) return Sci(v);
  return Format("%.3f", v);
}

struct Dataset {
  std::int64_t sequences = 0;
  std::vector<std::int8_t> x;  // (sequences * kSeqLength) x kTokenDim, row-major
  std::vector<float> y;        // one target per token
  std::size_t Tokens() const { return y.size(); }
};

// Targets come from a random "teacher" network plus label noise, so the achievable loss is
// known (about kLabelNoise^2) and does not depend on the student's knobs.
class Teacher {
 public:
  explicit Teacher(Rng& rng) : w_(kTeacherWidth * kTokenDim), a_(kTeacherWidth) {
    // Gain 1.5 puts the teacher's units in tanh's nonlinear range, so a linear fit is not enough.
    for (float& w : w_) w = static_cast<float>(rng.Normal() * 1.5 / std::sqrt(double{kTokenDim}));
    // E[tanh(1.5 z)^2] ~= 0.6 for z ~ N(0, 1); this scaling makes Var(y) ~= 1.
    for (float& a : a_) a = static_cast<float>(rng.Normal() / std::sqrt(0.6 * kTeacherWidth));
  }

  Dataset Sample(std::int64_t sequences, Rng& rng) const {
    Dataset d;
    d.sequences = sequences;
    const std::size_t tokens = static_cast<std::size_t>(sequences) * kSeqLength;
    d.x.resize(tokens * kTokenDim);
    d.y.resize(tokens);
    // Uniform int8 features: 8 per random draw keeps start-up fast for large data sets.
    for (std::size_t i = 0; i < d.x.size(); i += 8) {
      std::uint64_t bits = rng.Bits();
      for (std::size_t k = i; k < std::min(i + 8, d.x.size()); ++k, bits >>= 8)
        d.x[k] = static_cast<std::int8_t>(static_cast<int>(bits & 0xff) - 128);
    }
    float x[kTokenDim];
    for (std::size_t t = 0; t < tokens; ++t) {
      for (int j = 0; j < kTokenDim; ++j) x[j] = d.x[t * kTokenDim + j] * kFeatureScale;
      double y = 0;
      for (int k = 0; k < kTeacherWidth; ++k) {
        float z = 0;
        for (int j = 0; j < kTokenDim; ++j) z += w_[k * kTokenDim + j] * x[j];
        y += a_[k] * std::tanh(z);
      }
      d.y[t] = static_cast<float>(y + kLabelNoise * rng.Normal());
    }
    return d;
  }

 private:
  std::vector<float> w_;  // kTeacherWidth x kTokenDim
  std::vector<float> a_;
};

// kTokenDim -> hidden -> hidden -> 1 with tanh, squared-error loss per token. All parameters live
// in one flat vector so the optimizers and the grad norm treat them uniformly.
class Mlp {
 public:
  Mlp(int hidden, Rng& rng) : h_(static_cast<std::size_t>(hidden)), a1_(h_), a2_(h_), d2_(h_) {
    w1_ = 0;
    b1_ = w1_ + kTokenDim * h_;
    w2_ = b1_ + h_;
    b2_ = w2_ + h_ * h_;
    w3_ = b2_ + h_;
    b3_ = w3_ + h_;
    params_.assign(b3_ + 1, 0.0f);
    grads_.assign(params_.size(), 0.0f);
    // LeCun-normal keeps pre-activations at unit scale so tanh starts out unsaturated.
    auto init = [&](std::size_t offset, std::size_t count, double fan_in) {
      const double std_dev = 1.0 / std::sqrt(fan_in);
      for (std::size_t i = 0; i < count; ++i) params_[offset + i] = static_cast<float>(std_dev * rng.Normal());
    };
    init(w1_, kTokenDim * h_, kTokenDim);
    init(w2_, h_ * h_, static_cast<double>(h_));
    init(w3_, h_, static_cast<double>(h_));
  }

  std::size_t NumParams() const { return params_.size(); }
  std::vector<float>& Params() { return params_; }
  const std::vector<float>& Grads() const { return grads_; }

  // Forward and backward over every token of the given sequences; returns the mean token loss
  // and leaves its gradient in Grads().
  double Step(const Dataset& data, const std::vector<std::size_t>& sequences) {
    std::fill(grads_.begin(), grads_.end(), 0.0f);
    const float* p = params_.data();
    float* g = grads_.data();
    const std::size_t tokens = sequences.size() * kSeqLength;
    const float dscale = 2.0f / static_cast<float>(tokens);
    double loss = 0;
    for (std::size_t seq : sequences) {
      for (std::size_t t = seq * kSeqLength; t < (seq + 1) * kSeqLength; ++t) {
        const std::int8_t* x = &data.x[t * kTokenDim];
        const float err = Forward(x) - data.y[t];
        loss += double{err} * err;
        const float dout = dscale * err;

        g[b3_] += dout;
        for (std::size_t k = 0; k < h_; ++k) {
          g[w3_ + k] += dout * a2_[k];
          d2_[k] = dout * p[w3_ + k] * (1.0f - a2_[k] * a2_[k]);
          g[b2_ + k] += d2_[k];
        }
        // d1 reuses a1's buffer once a1 has been consumed by the weight gradient.
        for (std::size_t i = 0; i < h_; ++i) {
          const float av = a1_[i];
          const float* w = p + w2_ + i * h_;
          float* gw = g + w2_ + i * h_;
          float back = 0;
          for (std::size_t k = 0; k < h_; ++k) {
            gw[k] += av * d2_[k];
            back += w[k] * d2_[k];
          }
          a1_[i] = back * (1.0f - av * av);
          g[b1_ + i] += a1_[i];
        }
        for (int j = 0; j < kTokenDim; ++j) {
          const float xv = x[j] * kFeatureScale;
          float* gw = g + w1_ + static_cast<std::size_t>(j) * h_;
          for (std::size_t k = 0; k < h_; ++k) gw[k] += xv * a1_[k];
        }
      }
    }
    return loss / static_cast<double>(tokens);
  }

  double Evaluate(const Dataset& data) {
    double loss = 0;
    for (std::size_t t = 0; t < data.Tokens(); ++t) {
      const double err = double{Forward(&data.x[t * kTokenDim])} - data.y[t];
      loss += err * err;
    }
    return loss / static_cast<double>(data.Tokens());
  }

 private:
  // Leaves the hidden activations in a1_ and a2_ for the backward pass.
  float Forward(const std::int8_t* x) {
    const float* p = params_.data();
    // Input-major weights make the hot loops contiguous axpys over the hidden units.
    std::copy(p + b1_, p + b1_ + h_, a1_.begin());
    for (int j = 0; j < kTokenDim; ++j) {
      const float xv = x[j] * kFeatureScale;
      const float* w = p + w1_ + static_cast<std::size_t>(j) * h_;
      for (std::size_t k = 0; k < h_; ++k) a1_[k] += xv * w[k];
    }
    for (float& v : a1_) v = std::tanh(v);
    std::copy(p + b2_, p + b2_ + h_, a2_.begin());
    for (std::size_t i = 0; i < h_; ++i) {
      const float av = a1_[i];
      const float* w = p + w2_ + i * h_;
      for (std::size_t k = 0; k < h_; ++k) a2_[k] += av * w[k];
    }
    for (float& v : a2_) v = std::tanh(v);
    float out = p[b3_];
    for (std::size_t k = 0; k < h_; ++k) out += a2_[k] * p[w3_ + k];
    return out;
  }

  std::size_t h_;
  std::size_t w1_, b1_, w2_, b2_, w3_, b3_;
  std::vector<float> params_, grads_;
  std::vector<float> a1_, a2_, d2_;
};

class OptimizerState {
 public:
  OptimizerState(Optimizer kind, double lr, std::size_t n) : kind_(kind), lr_(lr) {
    if (kind != Optimizer::kSgd) m_.assign(n, 0.0f);
    if (kind == Optimizer::kAdam) v_.assign(n, 0.0f);
  }

  void Apply(std::vector<float>& params, const std::vector<float>& grads) {
    ++t_;
    const float lr = static_cast<float>(lr_);
    switch (kind_) {
      case Optimizer::kSgd:
        for (std::size_t i = 0; i < params.size(); ++i) params[i] -= lr * grads[i];
        break;
      case Optimizer::kMomentum:
        for (std::size_t i = 0; i < params.size(); ++i) {
          m_[i] = 0.9f * m_[i] + grads[i];
          params[i] -= lr * m_[i];
        }
        break;
      case Optimizer::kAdam: {
        constexpr float kB1 = 0.9f, kB2 = 0.999f, kEps = 1e-8f;
        const float c1 = 1.0f / static_cast<float>(1.0 - std::pow(kB1, t_));
        const float c2 = 1.0f / static_cast<float>(1.0 - std::pow(kB2, t_));
        for (std::size_t i = 0; i < params.size(); ++i) {
          m_[i] = kB1 * m_[i] + (1.0f - kB1) * grads[i];
          v_[i] = kB2 * v_[i] + (1.0f - kB2) * grads[i] * grads[i];
          params[i] -= lr * (m_[i] * c1) / (std::sqrt(v_[i] * c2) + kEps);
        }
        break;
      }
    }
  }

  // The moments and step count: what a resumed run needs to continue the same trajectory.
  void Save(std::FILE* f) const {
    std::fwrite(&t_, sizeof t_, 1, f);
    std::fwrite(m_.data(), sizeof(float), m_.size(), f);
    std::fwrite(v_.data(), sizeof(float), v_.size(), f);
  }
  bool Load(std::FILE* f) {
    return std::fread(&t_, sizeof t_, 1, f) == 1 && std::fread(m_.data(), sizeof(float), m_.size(), f) == m_.size() &&
           std::fread(v_.data(), sizeof(float), v_.size(), f) == v_.size();
  }

 private:
  Optimizer kind_;
  double lr_;
  std::int64_t t_ = 0;
  std::vector<float> m_, v_;
};

// Epoch-wise shuffling without replacement; batches may straddle epochs so any micro-batch size
// works with any data size.
class Sampler {
 public:
  Sampler(std::int64_t n, Rng& rng) : order_(static_cast<std::size_t>(n)), rng_(rng) {
    for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    Shuffle();
  }
  void Next(std::size_t count, std::vector<std::size_t>& out) {
    out.clear();
    while (out.size() < count) {
      if (pos_ == order_.size()) Shuffle();
      out.push_back(order_[pos_++]);
    }
  }

 private:
  void Shuffle() {
    for (std::size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng_.Below(i)]);
    pos_ = 0;
  }
  std::vector<std::size_t> order_;
  Rng& rng_;
  std::size_t pos_ = 0;
};

void PrintArguments(const Config& c) {
  Emit("------------------------ arguments ------------------------");
  auto arg = [](const std::string& name, const std::string& value) {
    Emit("  " + name + " " + std::string(48 - name.size(), '.') + " " + value);
  };
  arg("data_size", std::to_string(c.data_size));
  arg("fail_at_iter", std::to_string(c.fail_at_iter));
  arg("hidden_size", std::to_string(c.hidden));
  arg("log_interval", std::to_string(c.log_interval));
  arg("lr", Format("%g", c.lr));
  arg("micro_batch_size", std::to_string(c.micro_batch_size));
  arg("optimizer", OptimizerName(c.optimizer));
  arg("seed", std::to_string(c.seed));
  arg("seq_length", std::to_string(kSeqLength));
  arg("sleep_ms", std::to_string(c.sleep_ms));
  arg("token_dim", std::to_string(kTokenDim));
  arg("train_iters", std::to_string(c.train_iters));
  Emit("-------------------- end of arguments ---------------------");
}

// Sleeps in short slices so a signal cuts the artificial delay short instead of waiting it out.
void InterruptibleSleep(std::int64_t ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (g_signal == 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) break;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(10)));
  }
}

// Returns the exit code for the signal that stopped training at `iteration`.
int StopOnSignal(int sig, std::int64_t iteration) {
  if (sig == SIGUSR1) {
    Emit(Format("checkpoint requested at iteration %lld", static_cast<long long>(iteration)));
  }
  Emit(Format("received signal, exiting at iteration %lld", static_cast<long long>(iteration)));
  if (sig == SIGUSR1) return 0;
  return sig == SIGINT ? kExitSigint : kExitSigterm;
}

}  // namespace

// Checkpoint file: magic, iteration, parameter count, parameters, optimizer state. Written to a
// temporary name and renamed, so a kill during the write leaves the previous checkpoint intact.
constexpr std::uint64_t kCheckpointMagic = 0x31504b434d4c504dULL;  // "MPLMCKP1"

bool SaveCheckpoint(const std::string& path, std::int64_t iteration, const std::vector<float>& params,
                    const OptimizerState& optimizer) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return false;
  const std::uint64_t n = params.size();
  std::fwrite(&kCheckpointMagic, sizeof kCheckpointMagic, 1, f);
  std::fwrite(&iteration, sizeof iteration, 1, f);
  std::fwrite(&n, sizeof n, 1, f);
  std::fwrite(params.data(), sizeof(float), params.size(), f);
  optimizer.Save(f);
  const bool ok = std::fflush(f) == 0 && std::ferror(f) == 0;
  std::fclose(f);
  return ok && std::rename(tmp.c_str(), path.c_str()) == 0;
}

// Returns the iteration the checkpoint was taken at, 0 if there is none, -1 if it is unusable.
std::int64_t LoadCheckpoint(const std::string& path, std::vector<float>& params, OptimizerState& optimizer) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return 0;
  std::uint64_t magic = 0, n = 0;
  std::int64_t iteration = -1;
  bool ok = std::fread(&magic, sizeof magic, 1, f) == 1 && magic == kCheckpointMagic &&
            std::fread(&iteration, sizeof iteration, 1, f) == 1 && std::fread(&n, sizeof n, 1, f) == 1 &&
            n == params.size() && std::fread(params.data(), sizeof(float), params.size(), f) == params.size() &&
            optimizer.Load(f);
  std::fclose(f);
  return ok ? iteration : -1;
}

int main(int argc, char** argv) {
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGUSR1, OnSignal);
  const Config cfg = ParseArgs(argc, argv);

  Emit(
      "using world size: 1, data-parallel size: 1, tensor-model-parallel size: 1, "
      "pipeline-model-parallel size: 1");
  PrintArguments(cfg);

  Emit(
      Format("> building synthetic regression dataset (teacher MLP, %lld train + %d validation "
             "sequences of %d tokens x %d features, data seed %llu) ...",
             static_cast<long long>(cfg.data_size), kValidationSize, kSeqLength, kTokenDim,
             static_cast<unsigned long long>(kDataSeed)));
  Rng data_rng(kDataSeed);
  const Teacher teacher(data_rng);
  // A separate stream keeps the validation set identical across --data-size values.
  Rng val_rng(kDataSeed + 1);
  const Dataset train = teacher.Sample(cfg.data_size, data_rng);
  const Dataset valid = teacher.Sample(kValidationSize, val_rng);

  Emit("> building model ...");
  Rng rng(cfg.seed);
  Mlp model(static_cast<int>(cfg.hidden), rng);
  Emit(Format(" > number of parameters: %zu", model.NumParams()));
  OptimizerState optimizer(cfg.optimizer, cfg.lr, model.NumParams());
  Sampler sampler(cfg.data_size, rng);
  Emit(Format("> optimizer: %s, learning rate: %s (constant)", OptimizerName(cfg.optimizer), Sci(cfg.lr).c_str()));
  Emit("[after model, optimizer, and learning rate scheduler are built] datetime: " + Timestamp());

  std::int64_t start_iter = 1;
  if (!cfg.checkpoint.empty()) {
    const std::int64_t resumed = LoadCheckpoint(cfg.checkpoint, model.Params(), optimizer);
    if (resumed < 0) {
      std::fprintf(stderr, "ERROR: checkpoint %s is unreadable or from other settings\n", cfg.checkpoint.c_str());
      return 2;
    }
    if (resumed > 0) {
      Emit(Format("> resumed from checkpoint %s at iteration %lld", cfg.checkpoint.c_str(),
                  static_cast<long long>(resumed)));
      start_iter = resumed + 1;
      // Replaying the batch order is cheap (indices only) and makes the resumed run draw the
      // same batches as an uninterrupted one.
      std::vector<std::size_t> skipped;
      for (std::int64_t i = 0; i < resumed; ++i) sampler.Next(static_cast<std::size_t>(cfg.micro_batch_size), skipped);
    }
  }
  auto stop = [&](std::int64_t it) {
    if (!cfg.checkpoint.empty() && (g_signal == SIGUSR1 || g_signal == SIGTERM) && it > 0) {
      if (SaveCheckpoint(cfg.checkpoint, it, model.Params(), optimizer)) {
        Emit(Format("> saved checkpoint %s at iteration %lld", cfg.checkpoint.c_str(), static_cast<long long>(it)));
      } else {
        std::fprintf(stderr, "ERROR: cannot write checkpoint %s\n", cfg.checkpoint.c_str());
      }
    }
    return StopOnSignal(g_signal, it);
  };
  if (g_signal != 0) return stop(start_iter - 1);

  Emit("training ...");
  Emit("[before the start of training step] datetime: " + Timestamp());

  // Megatron's estimate: 6 FLOPs per parameter per token (forward 2, backward 4).
  const double flops_per_iter =
      6.0 * static_cast<double>(model.NumParams()) * static_cast<double>(cfg.micro_batch_size * kSeqLength);
  std::vector<std::size_t> batch;
  auto interval_start = std::chrono::steady_clock::now();
  std::int64_t interval_iters = 0;
  double interval_loss = 0;

  for (std::int64_t it = start_iter; it <= cfg.train_iters; ++it) {
    if (it == cfg.fail_at_iter) {
      std::fprintf(stderr, "ERROR: injected failure at iteration %lld (--fail-at-iter)\n", static_cast<long long>(it));
      return kExitInjectedFailure;
    }
    sampler.Next(static_cast<std::size_t>(cfg.micro_batch_size), batch);
    const double loss = model.Step(train, batch);
    double sq = 0;
    for (float gv : model.Grads()) sq += double{gv} * gv;
    const double grad_norm = std::sqrt(sq);
    const bool diverged = !std::isfinite(loss) || loss > kDivergenceLoss || !std::isfinite(grad_norm);
    if (!diverged) optimizer.Apply(model.Params(), model.Grads());

    ++interval_iters;
    interval_loss += loss;
    if (cfg.sleep_ms > 0) InterruptibleSleep(cfg.sleep_ms);

    if (diverged || it % cfg.log_interval == 0 || it == cfg.train_iters) {
      const auto now = std::chrono::steady_clock::now();
      const double secs = std::chrono::duration<double>(now - interval_start).count();
      const double ms_per_iter = 1e3 * secs / static_cast<double>(interval_iters);
      const double tflops = flops_per_iter * static_cast<double>(interval_iters) / std::max(secs, 1e-9) / 1e12;
      // A diverged interval is reported as Megatron reports a NaN loss, whatever the actual
      // overflowing value: "nan" is what log scrapers look for.
      const double mean_loss = diverged ? std::nan("") : interval_loss / static_cast<double>(interval_iters);
      // Field names and widths copy Megatron-LM's training_log() so its parsers read this as is.
      // TFLOP/s gets 6 decimals instead of 1 because a CPU MLP runs at a few GFLOP/s.
      Emit(" [" + Timestamp() + "]" +
           Format(" iteration %8lld/%8lld |", static_cast<long long>(it), static_cast<long long>(cfg.train_iters)) +
           Format(" consumed samples: %12lld |", static_cast<long long>(it * cfg.micro_batch_size)) +
           Format(" elapsed time per iteration (ms): %.1f |", ms_per_iter) +
           Format(" throughput per GPU (TFLOP/s/GPU): %.6f |", tflops) + " learning rate: " + Sci(cfg.lr) + " |" +
           Format(" global batch size: %5lld |", static_cast<long long>(cfg.micro_batch_size)) +
           " lm loss: " + Sci(mean_loss) + " |" + " loss scale: 1.0 |" + " grad norm: " + Fixed3(grad_norm) + " |" +
           " number of skipped iterations:   0 |" + Format(" number of nan iterations: %3d |", diverged ? 1 : 0));
      interval_start = now;
      interval_iters = 0;
      interval_loss = 0;
    }
    if (diverged) {
      std::fprintf(stderr, "lm loss %s, grad norm %s (divergence threshold %g)\n", Sci(loss).c_str(),
                   Sci(grad_norm).c_str(), kDivergenceLoss);
      std::fprintf(stderr, "ERROR: training diverged at iteration %lld\n", static_cast<long long>(it));
      return kExitDiverged;
    }
    if (g_signal != 0) return stop(it);
  }

  const double val_loss = model.Evaluate(valid);
  const std::string rule(100, '-');
  Emit(rule);
  Emit(
      Format(" validation loss at iteration %lld on validation set | lm loss value: %s | "
             "lm loss PPL: %s | ",
             static_cast<long long>(cfg.train_iters), Sci(val_loss).c_str(),
             Sci(std::exp(std::min(val_loss, 700.0))).c_str()));
  Emit(rule);
  Emit("[after training is done] datetime: " + Timestamp());
  return 0;
}
