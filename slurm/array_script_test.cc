// Tests of the job array's dispatch script.
#include <catch2/catch.hpp>

#include "slurm/sbatch_script.h"

namespace sweep::slurm {
namespace {

TEST_CASE("array dispatch: the template's directives, then one case per task that execs its trial's script") {
  std::string body =
      ArrayDispatchBody("demo", {"#SBATCH --gres=gpu:8"},
                        {{"/w/logs/ss-demo-arr1-1_0.out", "/w/logs/t-a.1.out", "/w/scripts/t-a.1.sbatch"},
                         {"/w/logs/ss-demo-arr1-1_1.out", "/w/logs/t b.1.out", "/w/scripts/t-b.1.sbatch"}});
  CHECK(body ==
        "#!/bin/bash\n"
        "#SBATCH --gres=gpu:8\n"
        "# slurmsweep job array of study demo: each task execs its trial's own script.\n"
        "case \"${SLURM_ARRAY_TASK_ID:-}\" in\n"
        "  0) ln -sfn 'ss-demo-arr1-1_0.out' '/w/logs/t-a.1.out'; exec '/w/scripts/t-a.1.sbatch' ;;\n"
        "  1) ln -sfn 'ss-demo-arr1-1_1.out' '/w/logs/t b.1.out'; exec '/w/scripts/t-b.1.sbatch' ;;\n"
        "  *) echo \"slurmsweep: array task ${SLURM_ARRAY_TASK_ID:-?} has no trial\" >&2; exit 2 ;;\n"
        "esac\n");
}

}  // namespace
}  // namespace sweep::slurm
