// `strata template`: renders a chat template with messages from a file and writes exactly the rendered bytes,
// as transformers' apply_chat_template(tokenize=False) would give them.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "args.hpp"
#include "commands.hpp"
#include "strata/chat_template.hpp"

namespace strata::cli {
namespace {

std::string read_file(const std::string& option, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + option + " '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error("cannot read " + option + " '" + path + "': " + std::strerror(errno));
  return ss.str();
}

nlohmann::ordered_json read_json(const std::string& option, const std::string& path) {
  const std::string text = read_file(option, path);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(option + " '" + path + "' is not valid JSON: " + e.what());
  }
}

// YYYY-MM-DD[(T| )HH:MM[:SS[.fff]]][Z|(+|-)HH[:]MM]: without a zone it is local time, as Python's naive
// datetime is.
std::chrono::system_clock::time_point parse_iso_time(const std::string& text) {
  const auto bad = [&]() {
    return UsageError("--now '" + text + "' is not an ISO time like 2026-01-15T09:30:00 (optionally with Z or +02:00)");
  };
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &consumed) != 3 || consumed != 10) {
    throw bad();
  }
  size_t p = 10;
  if (p < text.size() && (text[p] == 'T' || text[p] == ' ')) {
    int n = 0;
    if (std::sscanf(text.c_str() + p + 1, "%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &n) != 2) throw bad();
    p += 1 + static_cast<size_t>(n);
    if (p < text.size() && text[p] == ':') {
      if (std::sscanf(text.c_str() + p + 1, "%2d%n", &tm.tm_sec, &n) != 1) throw bad();
      p += 1 + static_cast<size_t>(n);
      if (p < text.size() && text[p] == '.') {
        ++p;
        while (p < text.size() && std::isdigit(static_cast<unsigned char>(text[p]))) ++p;  // strftime shows no fraction
      }
    }
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::time_t t;
  if (p == text.size()) {
    tm.tm_isdst = -1;
    t = std::mktime(&tm);
  } else {
    long offset = 0;
    if (text.substr(p) != "Z") {
      int hh = 0, mm = 0;
      const char sign = text[p];
      if ((sign != '+' && sign != '-') ||
          (std::sscanf(text.c_str() + p + 1, "%2d:%2d", &hh, &mm) != 2 && std::sscanf(text.c_str() + p + 1, "%2d%2d", &hh, &mm) != 2)) {
        throw bad();
      }
      offset = (sign == '-' ? -1 : 1) * (hh * 3600L + mm * 60L);
    }
    t = timegm(&tm) - offset;
  }
  if (t == static_cast<std::time_t>(-1)) throw bad();
  return std::chrono::system_clock::from_time_t(t);
}

const char* const kTemplateSummary =
    "Renders a chat template (Jinja, as in a GGUF's tokenizer.chat_template) the way Hugging Face transformers'\n"
    "apply_chat_template does, and writes exactly the rendered text to stdout, nothing added.\n\n"
    "The template sees: messages (--messages, a JSON array), tools (--tools, a JSON array; none when not given),\n"
    "documents (none), add_generation_prompt (false unless --add-generation-prompt), bos_token and eos_token\n"
    "(empty strings unless set with --var; the server passes the model's), and each --var KEY=VALUE, where VALUE\n"
    "is JSON (true, 3, \"text\", {...}) or else taken as a plain string: --var bos_token='<s>'.\n"
    "strftime_now uses the local time now, or the time --now gives.";

}  // namespace

int cmd_template(const Args& args) {
  ArgParser p("strata template",
              "--template FILE --messages FILE.json [--tools FILE.json] [--add-generation-prompt] "
              "[--var KEY=VALUE]... [--now ISO-TIME]",
              kTemplateSummary);
  std::string template_path, messages_path, tools_path, now_text;
  bool generation_prompt = false;
  std::vector<std::string> vars;
  p.option("--template", "FILE", "the Jinja chat template", &template_path);
  p.option("--messages", "FILE.json", "the conversation: a JSON array of message objects", &messages_path);
  p.option("--tools", "FILE.json", "tool definitions: a JSON array (OpenAI style)", &tools_path);
  p.flag("--add-generation-prompt", "end with the header of the assistant's reply", &generation_prompt);
  p.repeated("--var", "KEY=VALUE", "one more template variable (VALUE: JSON, or else a string)", &vars);
  p.option("--now", "ISO-TIME", "the time strftime_now sees, e.g. 2026-01-15T09:30:00 (local) or ...Z", &now_text);
  if (!p.parse(args)) return 0;
  if (!p.given("--template")) throw UsageError("'strata template' needs --template FILE; see 'strata template --help'");
  if (!p.given("--messages")) throw UsageError("'strata template' needs --messages FILE.json; see 'strata template --help'");

  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = read_json("--messages", messages_path);
  if (!context["messages"].is_array()) throw Error("--messages '" + messages_path + "' must hold a JSON array of messages");
  context["tools"] = nullptr;
  if (p.given("--tools")) {
    context["tools"] = read_json("--tools", tools_path);
    if (!context["tools"].is_array()) throw Error("--tools '" + tools_path + "' must hold a JSON array of tools");
  }
  context["documents"] = nullptr;
  context["add_generation_prompt"] = generation_prompt;
  context["bos_token"] = "";
  context["eos_token"] = "";
  for (const std::string& v : vars) {
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--var '" + v + "' is not KEY=VALUE");
    const std::string value = v.substr(eq + 1);
    nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(value, nullptr, false);
    context[v.substr(0, eq)] = parsed.is_discarded() ? nlohmann::ordered_json(value) : parsed;
  }
  std::optional<std::chrono::system_clock::time_point> now;
  if (p.given("--now")) now = parse_iso_time(now_text);

  const chat::ChatTemplate tmpl(read_file("--template", template_path));
  const std::string out = tmpl.render(context, now);
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    throw Error(std::string("cannot write the rendered template to stdout: ") + std::strerror(errno));
  }
  return 0;
}

}  // namespace strata::cli
