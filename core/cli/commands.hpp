// The subcommands of `strata`. Each takes its arguments (after the command words) and returns the exit code:
// 0 success, 1 a check that ran and failed (gate), 2 bad input (flags, files, configs, plugins).
#pragma once

#include <string>
#include <vector>

namespace strata::cli {

using Args = std::vector<std::string>;

int cmd_plugins(const Args& args);
int cmd_config(const Args& args);
int cmd_tokenize(const Args& args);
int cmd_inspect(const Args& args);
int cmd_mkmodel(const Args& args);
int cmd_run(const Args& args);
int cmd_bench(const Args& args);
int cmd_profile(const Args& args);
int cmd_gate(const Args& args);
int cmd_template(const Args& args);
int cmd_serve(const Args& args);
int cmd_engine(const Args& args);

// The subcommands of `strata config` ("check", "show", "reference"), in the order its help lists them: its
// dispatch and `strata --list-commands` both read them.
const std::vector<std::string>& config_subcommands();

}  // namespace strata::cli
