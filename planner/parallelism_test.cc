// Tests of the parallelism rules: one case per rule, each naming the numbers that broke it,
// and the configurations of the 70B study that Megatron accepts.
#include <catch2/catch.hpp>

#include "planner/parallelism.h"

using namespace sweep;
using namespace sweep::planner;

namespace {

ModelPreset Llama70B() { return *FindModelPreset("llama3-70b"); }

// TP8 PP4 DP2 on 64 GPUs, GBS 128: valid for the 70B model.
ParallelConfig Valid() {
  ParallelConfig c;
  c.world = 64;
  c.tp = 8;
  c.pp = 4;
  c.mbs = 1;
  c.gbs = 128;
  c.sequence_parallel = true;
  return c;
}

}  // namespace

TEST_CASE("presets carry the published shapes", "[parallelism]") {
  auto m = Llama70B();
  CHECK(m.name == "llama3.1-70b");
  CHECK(m.layers == 80);
  CHECK(m.hidden == 8192);
  CHECK(m.heads == 64);
  CHECK(m.kv_groups == 8);
  CHECK(m.ffn_hidden == 28672);
  CHECK(m.vocab == 128256);
  CHECK(m.seq_length == 8192);
  CHECK(m.swiglu);
  REQUIRE(FindModelPreset("llama3.1-8b"));
  CHECK(FindModelPreset("llama3.1-8b")->layers == 32);
  CHECK(FindModelPreset("gpt3-7b"));
  CHECK_FALSE(FindModelPreset("llama2-70b"));
}

TEST_CASE("a valid configuration passes every rule", "[parallelism]") {
  auto m = Llama70B();
  CHECK_FALSE(CheckParallelism(Valid(), m));
  CHECK(DataParallelSize(Valid()) == 2);
  auto c = Valid();
  c.recompute = "full";
  c.recompute_method = "uniform";
  c.recompute_layers = 20;  // = layers / PP
  CHECK_FALSE(CheckParallelism(c, m));
  c.recompute = "selective";
  c.recompute_method.clear();
  c.recompute_layers = 0;
  CHECK_FALSE(CheckParallelism(c, m));
}

TEST_CASE("each rule names the numbers that broke it", "[parallelism]") {
  auto m = Llama70B();
  auto c = Valid();
  SECTION("world divisible by TP*PP*CP") {
    c.tp = 8;
    c.pp = 3;
    CHECK(CheckParallelism(c, m) == "world size (64) not divisible by TP*PP*CP (8*3*1=24)");
  }
  SECTION("heads divisible by TP") {
    c.world = 48;
    c.tp = 3;
    c.pp = 1;
    c.gbs = 96;
    CHECK(CheckParallelism(c, m) == "heads (64) not divisible by TP (3)");
  }
  SECTION("KV groups divisible by TP") {
    c.tp = 16;
    c.pp = 4;
    c.world = 64;
    c.gbs = 128;
    CHECK(CheckParallelism(c, m) == "KV groups (8) not divisible by TP (16)");
  }
  SECTION("layers divisible by PP") {
    c.tp = 2;
    c.pp = 32;
    CHECK(CheckParallelism(c, m) == "layers (80) not divisible by PP (32)");
  }
  SECTION("layers divisible by the virtual stages") {
    c.vp = 3;
    CHECK(CheckParallelism(c, m) == "layers (80) not divisible by PP*VP (4*3=12)");
    c.vp = 5;
    CHECK_FALSE(CheckParallelism(c, m));
  }
  SECTION("global batch divisible by MBS*DP") {
    c.mbs = 3;
    CHECK(CheckParallelism(c, m) == "global batch (128) not divisible by MBS*DP (3*2=6)");
  }
  SECTION("no sequence parallelism without TP") {
    c.tp = 1;
    c.pp = 8;
    CHECK(CheckParallelism(c, m) == "sequence parallelism needs TP > 1");
  }
  SECTION("selective recompute takes no method") {
    c.recompute = "selective";
    c.recompute_method = "uniform";
    CHECK(CheckParallelism(c, m) == "selective recompute takes no recompute method or layers");
  }
  SECTION("full recompute needs a method") {
    c.recompute = "full";
    c.recompute_layers = 1;
    CHECK(CheckParallelism(c, m) == "full recompute needs method uniform or block (got \"\")");
  }
  SECTION("full recompute layers within 1..layers/PP") {
    c.recompute = "full";
    c.recompute_method = "block";
    c.recompute_layers = 21;
    CHECK(CheckParallelism(c, m) == "full recompute layers (21) outside 1..layers/PP (20)");
    c.recompute_layers = 0;
    CHECK(CheckParallelism(c, m) == "full recompute layers (0) outside 1..layers/PP (20)");
  }
  SECTION("unknown recompute") {
    c.recompute = "partial";
    CHECK(CheckParallelism(c, m) == "unknown recompute \"partial\" (none, selective or full)");
  }
  SECTION("context parallelism splits the sequence in 2*CP chunks") {
    m.seq_length = 8190;
    c.cp = 2;
    c.pp = 2;
    CHECK(CheckParallelism(c, m) == "sequence length (8190) not divisible by 2*CP (4)");
  }
}
