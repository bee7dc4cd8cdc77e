// `strata inspect FILE.gguf`: what a GGUF holds and what it costs (see strata/inspect.hpp), or one tensor's
// facts and values (--tensor). Exits 0 on a readable file, 2 on a bad file, flag or tensor name.
#include <cstdio>
#include <fstream>

#include "args.hpp"
#include "commands.hpp"
#include "strata/gguf.hpp"
#include "strata/inspect.hpp"

namespace strata::cli {
namespace {

int inspect_tensor(const gguf::Model& model, const std::string& name, uint64_t n_values, const std::string& raw,
                   bool json) {
  // Model::tensor names the nearest tensor when there is no such name.
  const gguf::TensorView& t = model.tensor(name);
  if (!raw.empty()) {
    std::ofstream out(raw, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("--raw: cannot create '" + raw + "'");
    inspect::write_tensor_f32(t, out);
    out.close();
    if (!out) throw Error("--raw: writing '" + raw + "' failed");
    std::fprintf(stderr, "strata: wrote %llu f32 values (%llu bytes, little-endian) of '%s' to %s\n",
                 static_cast<unsigned long long>(t.n_elements), static_cast<unsigned long long>(t.n_elements * 4),
                 std::string(t.name).c_str(), raw.c_str());
  }
  const std::vector<float> values = inspect::tensor_values(t, n_values);
  const std::string text = json ? inspect::render_tensor_json(t, values) : inspect::render_tensor_text(t, values);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

int cmd_inspect(const Args& args) {
  ArgParser p("strata inspect", "FILE.gguf [--json] [--tensor NAME [--values N] [--raw OUT]]",
              "Shows a GGUF file: version, alignment, parts and size; every metadata key with its type and value\n"
              "(long ones summarized); the tensor table; bytes and bits per weight by part and by type; for models,\n"
              "the bytes one token reads (routed experts and the rest) and the architecture's tensor check.");
  std::string file, tensor, raw;
  bool json = false;
  uint64_t n_values = 16;
  p.positional("FILE.gguf", "the model or GGUF file (the first part of a split model)", &file);
  p.flag("--json", "print one JSON object instead of text", &json);
  p.option("--tensor", "NAME", "show this tensor: type, shape, bytes, offset and its first values", &tensor);
  p.option("--values", "N", "with --tensor: how many values to show (default 16)",
           [&](const std::string& v) { n_values = static_cast<uint64_t>(parse_int("--values", v, 0, 1ll << 40)); });
  p.option("--raw", "OUT", "with --tensor: write all its values to OUT as little-endian f32", &raw);
  if (!p.parse(args)) return 0;
  if (tensor.empty() && (p.given("--values") || p.given("--raw"))) {
    throw UsageError("--values and --raw need --tensor NAME");
  }

  const gguf::Model model = gguf::Model::open(file);
  if (!tensor.empty()) return inspect_tensor(model, tensor, n_values, raw, json);
  const inspect::Report report = inspect::analyze(model);
  const std::string text = json ? inspect::render_json(model, report) : inspect::render_text(model, report);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace strata::cli
