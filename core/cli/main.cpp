// `strata`: dispatches to the subcommands. Errors a user can act on are printed as one line and exit 2.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iterator>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/suggest.hpp"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const strata::cli::Args&);
};

const Command kCommands[] = {
    {"plugins", "list every plugin file examined, with its version, kind, devices and verdict",
     strata::cli::cmd_plugins},
    {"config", "check a launch (config check FILE) or print the effective launch (config show FILE)",
     strata::cli::cmd_config},
    {"tokenize", "print the token ids of a text under a model's vocabulary", strata::cli::cmd_tokenize},
    {"inspect", "show a GGUF file: metadata, tensors, bytes by part and type, bytes per token",
     strata::cli::cmd_inspect},
    {"mkmodel", "write a synthetic model (any shape, quant mix, routing skew) or upcycle a dense one",
     strata::cli::cmd_mkmodel},
    {"run", "generate text from a prompt, streaming it (summary line on stderr; --json for one JSON object)",
     strata::cli::cmd_run},
    {"bench", "prefill and decode tokens/s (pp512, tg128; repetitions, median and spread; markdown or JSON)",
     strata::cli::cmd_bench},
    {"profile", "record a model's routing profile (experts per layer, counted over prompts) for experts.profile",
     strata::cli::cmd_profile},
    {"gate", "exactness gate: save a prompt set's greedy ids (--save), or re-run and compare id for id (--check)",
     strata::cli::cmd_gate},
    {"template", "render a chat template with messages from a file, exactly as transformers would",
     strata::cli::cmd_template},
    {"serve", "an OpenAI-compatible HTTP server (chat and text completions, streaming, metrics)",
     strata::cli::cmd_serve},
    {"engine", "an engine driven over stdin/stdout: JSON-line requests and tokens, control lines (PEER_DETACH, ...)",
     strata::cli::cmd_engine},
};

// The commands that take a subcommand word, and where their subcommands are listed.
struct Subcommands {
  const char* command;
  const std::vector<std::string>& (*names)();
};

const Subcommands kSubcommands[] = {{"config", strata::cli::config_subcommands}};

void print_usage(FILE* out) {
  std::fprintf(out,
               "usage: strata [--log-level LEVEL] <command> [options]\n\n"
               "Strata runs Mixture-of-Experts language models (GGUF) on GPUs and the CPU.\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\n'strata <command> --help' describes a command; 'strata --list-commands' prints every command\n"
               "(and config's subcommands) one a line.\n"
               "--log-level: debug, info, warn (default; also STRATA_LOG), error, off\n");
}

// One command a line, a command with subcommands as "config check", ...: what scripts and the README's test
// (tests/cli/readme_commands.cmake) read, so the README's table cannot miss a command.
void print_command_list() {
  for (const Command& c : kCommands) {
    const auto group = std::find_if(std::begin(kSubcommands), std::end(kSubcommands),
                                    [&](const Subcommands& g) { return std::strcmp(g.command, c.name) == 0; });
    if (group == std::end(kSubcommands)) {
      std::printf("%s\n", c.name);
      continue;
    }
    for (const std::string& sub : group->names()) std::printf("%s %s\n", c.name, sub.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    while (!args.empty() && args[0].rfind("--log-level", 0) == 0) {
      std::string value;
      if (args[0] == "--log-level") {
        if (args.size() < 2) throw strata::cli::UsageError("--log-level needs a value: debug, info, warn, error, off");
        value = args[1];
        args.erase(args.begin(), args.begin() + 2);
      } else if (args[0].rfind("--log-level=", 0) == 0) {
        value = args[0].substr(12);
        args.erase(args.begin());
      } else {
        break;
      }
      strata::log::Level level;
      if (!strata::log::parse_level(value, &level)) {
        throw strata::cli::UsageError("--log-level: '" + value + "' is not one of debug, info, warn, error, off");
      }
      strata::log::set_level(level);
    }
    if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
      if (args.size() >= 2 && args[0] == "help") {
        args = {args[1], "--help"};
      } else {
        print_usage(stdout);
        return args.empty() ? 2 : 0;
      }
    }
    if (args[0] == "--list-commands") {
      print_command_list();
      return 0;
    }
    if (args[0] == "--version" || args[0] == "version") {
      std::printf("strata %s\n", STRATA_VERSION);
      return 0;
    }
    std::vector<std::string> names;
    for (const Command& c : kCommands) {
      names.emplace_back(c.name);
      if (args[0] == c.name) return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
    }
    throw strata::cli::UsageError("unknown command '" + args[0] + "'" + strata::did_you_mean(args[0], names) +
                                  "; 'strata --help' lists the commands");
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "strata: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: internal error: %s\n", e.what());
    return 3;
  }
}
