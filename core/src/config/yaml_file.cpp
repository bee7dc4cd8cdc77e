#include <fstream>
#include <sstream>
#include <system_error>

#include <yaml-cpp/depthguard.h>  // YAML::DeepRecursion, which yaml.h does not include
#include <yaml-cpp/yaml.h>

#include "assign.hpp"
#include "sources.hpp"

namespace strata::config {

std::string yaml_refusal(const YAML::Exception& e) {
  if (dynamic_cast<const YAML::DeepRecursion*>(&e) != nullptr) {
    return "nested too deeply (yaml-cpp stops at a few hundred levels of lists and maps)";
  }
  return e.msg;
}

namespace {

const char* const kTopLevelHint = "a launch is a YAML map of keys such as model, backend, plugins, experts, runtime";

// YAML::Mark's default is the start of the file: where whole-file problems are reported.
YAML::Mark file_start() { return YAML::Mark(); }

}  // namespace

void apply_file(Builder& builder, const std::filesystem::path& file) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(file, ec);
  Source source{Source::Kind::File, file.string(), (ec ? file : absolute).parent_path(), 0};

  if (std::filesystem::is_directory(file, ec)) {
    builder.error(Diagnostic::Kind::MissingFile, where(source), "is a folder, expected a YAML launch file");
    return;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    const bool exists = std::filesystem::exists(file, ec);
    builder.error(Diagnostic::Kind::MissingFile, where(source),
                  exists ? "cannot be read (check its permissions)" : "launch file not found");
    return;
  }
  std::ostringstream text;
  text << in.rdbuf();

  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text.str());
  } catch (const YAML::DeepRecursion& e) {
    builder.error(Diagnostic::Kind::Syntax, where(source, e.mark.is_null() ? file_start() : e.mark),
                  "YAML " + yaml_refusal(e) + "; a launch needs only a few: see configs/default.yaml");
    return;
  } catch (const YAML::Exception& e) {
    builder.error(Diagnostic::Kind::Syntax, where(source, e.mark.is_null() ? file_start() : e.mark),
                  "YAML syntax error: " + e.msg);
    return;
  }
  if (documents.empty() || (documents.size() == 1 && documents[0].IsNull())) {
    builder.error(Diagnostic::Kind::Schema, where(source, file_start()),
                  std::string("the file is empty: ") + kTopLevelHint + " (see configs/default.yaml)");
    return;
  }
  if (documents.size() > 1) {
    const YAML::Mark second = documents[1].Mark();
    builder.error(Diagnostic::Kind::Schema, second.is_null() ? where(source) : where(source, second),
                  "a launch is one YAML document, this file has " + std::to_string(documents.size()) +
                      ": remove all but the first");
  }
  const YAML::Node& root = documents[0];
  if (!root.IsMap()) {
    builder.error(Diagnostic::Kind::Schema, where(source, root.IsNull() ? file_start() : root.Mark()),
                  std::string("the top level must be a map: ") + kTopLevelHint + ", not " +
                      (root.IsSequence() ? "a list" : root.IsNull() ? "nothing" : "'" + root.Scalar() + "'"));
    return;
  }
  assign_map(builder, source, {}, root);
}

}  // namespace strata::config
