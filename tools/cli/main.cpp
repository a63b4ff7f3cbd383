// flashband: run, check and time attention problems; print the support matrix; run the demo.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"

namespace {

const char* kUsage = R"(usage: flashband <command> [flags]

commands:
  demo     the main job: a small Llama-like batch through a windowed and a full layer,
           checked against the fp64 oracle (--backend NAME to pick one)
  run      one problem on random data:
             --entry single|ragged|paged|decode  --batch N  --qo-len N --kv-len N
             --qo-lens a,b,c --kv-lens a,b,c  --heads N --kv-heads N --head-dim D
             --dtype fp16|bf16|fp32  --causal  --window W  --window-right R  --soft-cap C
             --sm-scale S  --kv-dtype as-q|e4m3|e5m2  --k-scale S --v-scale S  --scale-tensors
             --q-dtype fp16|bf16|fp32|e4m3  (q's dtype instead of --dtype; e4m3 is fp8
               attention: K/V e4m3, needs --o-dtype fp16|bf16)  --q-scale S  --o-dtype D
             --sinks s0,s1,...  (attention sinks, one per query head)
             --mask-density P  (a random custom mask from --seed, P of the keys allowed)
             --mask-tree  (a tree-verify mask: the last qo_len keys a random draft tree)
             --page-size P  --layout NHD|HND  --stacked  --no-lse
             --backend auto|cpu|sm80|sm90|cudnn  --check  --iters N --warmup N  --seed N  --json
  caps     the support matrix for this machine (--markdown: the README table)
  help     this text
)";

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "demo";
  try {
    flashband::cli::Args args(argc, argv, argc > 1 ? 2 : 1);
    if (cmd == "demo") return flashband::cli::cmd_demo(args);
    if (cmd == "run") return flashband::cli::cmd_run(args);
    if (cmd == "caps") return flashband::cli::cmd_caps(args);
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "flashband: unknown command '%s'\n\n%s", cmd.c_str(), kUsage);
    return 2;
  } catch (const flashband::Error& e) {
    std::fprintf(stderr, "flashband: error (%s): %s\n", flashband::error_code_name(e.code()), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashband: error: %s\n", e.what());
    return 2;
  }
}
