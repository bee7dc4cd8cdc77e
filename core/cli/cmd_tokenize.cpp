// `strata tokenize`: the token ids of a text under a model's vocabulary, as llama.cpp would give them.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "args.hpp"
#include "commands.hpp"
#include "strata/tokenizer.hpp"

namespace strata::cli {
namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read --file '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error("cannot read --file '" + path + "': " + std::strerror(errno));
  return ss.str();
}

// A piece as a quoted string: printable ASCII and complete UTF-8 as they are, the rest escaped.
std::string quote_piece(std::string_view p) {
  std::string out = "'";
  for (size_t i = 0; i < p.size(); ++i) {
    const auto b = static_cast<unsigned char>(p[i]);
    if (p[i] == '\n') {
      out += "\\n";
    } else if (p[i] == '\t') {
      out += "\\t";
    } else if (p[i] == '\r') {
      out += "\\r";
    } else if (p[i] == '\'' || p[i] == '\\') {
      out += '\\';
      out += p[i];
    } else if (b >= 0x20 && b < 0x7F) {
      out += p[i];
    } else {
      // Keep a well-formed multi-byte sequence readable; escape anything else byte by byte.
      size_t len = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xC2 && b <= 0xDF ? 2 : 0;
      bool whole = len > 0 && i + len <= p.size();
      for (size_t k = 1; whole && k < len; ++k) whole = (static_cast<unsigned char>(p[i + k]) & 0xC0) == 0x80;
      if (whole) {
        out.append(p, i, len);
        i += len - 1;
      } else {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", b);
        out += hex;
      }
    }
  }
  return out + "'";
}

std::string summary() {
  std::string s =
      "Prints the token ids of a text on one line, separated by spaces: BOS/EOS where the vocabulary adds them,\n"
      "special-token texts as plain text unless --special. --file takes the file's bytes exactly (a trailing\n"
      "newline is part of the text).\n\nByte-level BPE pre-tokenizers (tokenizer.ggml.pre) this build knows:\n ";
  size_t col = 1;
  for (const std::string& n : pre_tokenizer_names()) {
    if (col + n.size() + 1 > 100) {
      s += "\n ";
      col = 1;
    }
    s += " " + n;
    col += n.size() + 1;
  }
  return s;
}

}  // namespace

int cmd_tokenize(const Args& args) {
  ArgParser p("strata tokenize", "--model FILE (--text TEXT | --file FILE) [--no-bos] [--special] [--pieces]",
              summary());
  std::string model, text, file;
  bool no_bos = false, special = false, pieces = false;
  p.option("-m|--model", "FILE", "the GGUF whose vocabulary to use (only its metadata is read)", &model);
  p.option("-t|--text", "TEXT", "the text to tokenize", &text);
  p.option("-f|--file", "FILE", "tokenize this file's bytes", &file);
  p.flag("--no-bos", "do not add BOS even where the vocabulary asks for it", &no_bos);
  p.flag("--special", "match control-token texts (\"<|im_start|>\") as those tokens", &special);
  p.flag("--pieces", "also print each token's id and text, one per line", &pieces);
  if (!p.parse(args)) return 0;
  if (!p.given("--model")) throw UsageError("'strata tokenize' needs --model FILE; see 'strata tokenize --help'");
  if (p.given("--text") == p.given("--file")) {
    throw UsageError("'strata tokenize' needs exactly one of --text TEXT and --file FILE");
  }
  if (p.given("--file")) text = read_bytes(file);

  const Tokenizer tok = Tokenizer::from_file(model);
  const std::vector<TokenId> ids = tok.encode(text, {.add_bos = !no_bos, .add_eos = true, .parse_special = special});
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) line += ' ';
    line += std::to_string(ids[i]);
  }
  std::printf("%s\n", line.c_str());
  if (pieces) {
    for (const TokenId id : ids) std::printf("%6d %s\n", id, quote_piece(tok.piece(id, true)).c_str());
  }
  return 0;
}

}  // namespace strata::cli
