// `strata engine`: an engine process driven over stdin and stdout (strata/engine_protocol.hpp): requests in and
// tokens out as JSON lines, and control lines answered with one "CTL ..." line each. A reader thread takes stdin's
// lines as they come, so that a control line sent while a request runs is answered between two of its windows
// (the lead detaches only between windows); requests run one at a time, in order. End of input ends the process
// after the running request.
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "args.hpp"
#include "commands.hpp"
#include "launch_options.hpp"
#include "line_inbox.hpp"
#include "projector_launch.hpp"
#include "strata/speculative.hpp"
#include "strata/engine.hpp"
#include "strata/engine_protocol.hpp"
#include "strata/error.hpp"
#include "strata/prefix_cache.hpp"
#include "strata/prompt_images.hpp"
#include "strata/sha256.hpp"
#include "strata/vision.hpp"
#include "strata/sampling.hpp"

namespace strata::cli {
namespace {

using json = nlohmann::json;

void emit(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// What slot 0 holds: the last request's prompt and reply, so that a request that starts with them feeds only the
// rest. `running`: the request being generated, whose CANCEL ends it at its next token.
struct Session {
  std::vector<TokenId> held;
  bool running = false;
  bool cancel = false;
  std::string running_id;
  std::deque<std::string> cancelled_ahead;  // ids CANCELled before they started: they will not (the last 256)
  bool take_cancelled(const std::string& id) {
    const auto it = std::find(cancelled_ahead.begin(), cancelled_ahead.end(), id);
    if (it == cancelled_ahead.end()) return false;
    cancelled_ahead.erase(it);
    return true;
  }
};

// Applies one control line and says what was done or why not.
std::string answer_control(Engine& engine, Session& session, const std::string& line) {
  const auto parsed = protocol::parse_control_line(line);
  if (const std::string* why = std::get_if<std::string>(&parsed)) return "CTL ERR " + *why;
  const protocol::ControlLine& c = std::get<protocol::ControlLine>(parsed);
  const std::string name = protocol::control_name(c);
  try {
    switch (c.kind) {
      case protocol::ControlKind::PeerDetach: return "CTL " + name + " done: " + engine.detach_peer();
      case protocol::ControlKind::PeerAttach: return "CTL " + name + " done: " + engine.attach_peer();
      case protocol::ControlKind::PoolHold: return "CTL " + name + " done: " + engine.hold_pool(c.value);
      case protocol::ControlKind::LinkServe: return "CTL " + name + " done: " + engine.serve_link(c.value != 0);
      case protocol::ControlKind::Cancel:
        // Idempotent: a request that ended meanwhile is nothing to cancel, and that is no error.
        if (session.running && (c.id.empty() || c.id == session.running_id)) {
          session.cancel = true;
          return "CTL " + name + " done: request " + session.running_id + " stops at its next token";
        }
        if (c.id.empty()) return "CTL " + name + " done: no request is running";
        session.cancelled_ahead.push_back(c.id);
        if (session.cancelled_ahead.size() > 256) session.cancelled_ahead.pop_front();
        return "CTL " + name + " done: request " + c.id + " is not running; it will not start";
    }
  } catch (const Error& e) {
    return "CTL " + name + " refused: " + e.what() + "; nothing changed";
  }
  return "CTL ERR internal: an unknown control";
}

void run_request(Engine& engine, Session& session, LineInbox& inbox, const protocol::EngineRequest& r,
                 const vision::Projector* projector) {
  const Tokenizer& tok = engine.model().tokenizer();
  std::vector<TokenId> prompt = r.prompt_ids;
  CompletionOptions options = r.options;
  // Images: each through the projector (kept until the request ends), placed at the prompt's -1 marks or
  // <__media__> markers (first without markers), and the prompt keyed by their bytes for the slot's reuse.
  if (!r.images.empty() && projector == nullptr) {
    throw Error("\"images\": this engine has no vision projector; start it with --mmproj FILE (or mmproj: in the "
                "launch), the model's mmproj GGUF");
  }
  std::vector<vision::Embeddings> rows;
  std::vector<Engine::ImageTokens> images;
  std::vector<Sha256Digest> digests;
  for (size_t k = 0; k < r.images.size(); ++k) {
    const vision::ImageSource source = vision::read_image_source(r.images[k], "\"images\"[" + std::to_string(k) + "]");
    rows.push_back(encode_image(engine, *projector, projector->preprocess(source.image)));
    digests.push_back(sha256(source.bytes));
  }
  for (const vision::Embeddings& e : rows) images.push_back(Engine::ImageTokens{e.rows, e.nx, e.ny, e.n_pos});
  if (r.prompt) {
    // As `strata run` encodes a prompt (the vocabulary's BOS and dummy-prefix space), so the ids are run's.
    EncodeOptions enc;
    enc.add_eos = false;
    if (images.empty()) {
      prompt = tok.encode(*r.prompt, enc);
    } else {
      prompt = encode_with_images(tok, *r.prompt, images, [&](std::string_view piece, bool first) {
        EncodeOptions e = enc;
        e.add_bos = first;
        return tok.encode(piece, e);
      }, options.images);
    }
    if (prompt.empty()) throw Error("the prompt encodes to no tokens and the vocabulary adds no BOS");
    const bool bos_only = prompt.size() == 1 && tok.bos() != kNoToken && prompt.front() == tok.bos();
    options.strip_leading_space = bos_only && tok.add_space_prefix();
  } else if (!images.empty()) {
    prompt = expand_image_marks(tok, r.prompt_ids, images, options.images);
  }
  const std::vector<TokenId> key = images.empty() ? prompt : keyed_prompt(prompt, options.images, digests);
  const json id = json::parse(r.id);
  // The longest common prefix with what the slot holds is not fed again (complete() caps it at the slot's length);
  // with images, of the keyed prompt: an image is reused only when the slot held the same bytes.
  const size_t reuse = common_prefix(key, session.held);
  session.held.clear();  // until this request has ended well, the slot's contents are not known
  session.running = true;
  session.cancel = false;
  session.running_id = r.id;
  struct Idle {
    Session& s;
    ~Idle() { s.running = false; }
  } idle{session};
  const CompletionResult result = complete(engine, 0, prompt, reuse, options, [&](const GeneratedToken& t) {
    // Between two windows: the control lines that came meanwhile. A verify window (speculative.draft) is one
    // window: PEER_DETACH and the others wait for its end (its last token), never between its rows.
    if (!t.mid_window) inbox.take_controls([&](const std::string& c) { emit(answer_control(engine, session, c)); });
    if (session.cancel) return false;
    // The last call carries only the text held back (a partial UTF-8 sequence, a stop string's start): token null.
    if (r.stream && (t.id != kNoToken || !t.text.empty())) {
      emit(dump(json{{"id", id}, {"token", t.id != kNoToken ? json(t.id) : json(nullptr)}, {"text", t.text}}));
    }
    return true;
  });
  emit(dump(json{{"id", id},
                 {"done", true},
                 {"finish_reason", std::string(finish_reason(result.stop))},
                 {"prompt_tokens", prompt.size()},
                 {"images", r.images.size()},
                 {"reused_tokens", result.reused_tokens},
                 {"generated_ids", result.generated_ids},
                 {"text", result.text},
                 {"prompt_seconds", result.prompt_seconds},
                 {"decode_seconds", result.decode_seconds},
                 {"drafted", result.draft.drafted},
                 {"accepted", result.draft.accepted}}));
  session.held = key;
  session.held.insert(session.held.end(), result.generated_ids.begin(), result.generated_ids.end());
}

}  // namespace

int cmd_engine(const Args& args) {
  ArgParser p("strata engine",
              "[--config FILE] [--model FILE] [-o KEY=VALUE ...] [--peer-link FILE [--peer-link-role 0|1]]",
              "An engine process driven over stdin and stdout, one line each way at a time:\n"
              "  a request, one JSON object: {\"id\": 1, \"prompt\": \"Once upon a time\", \"max_tokens\": 32}\n"
              "    (or \"prompt_ids\": [...]; \"images\": [FILE or data URL, ...] with --mmproj, each at the\n"
              "    prompt's <__media__> marker (first without one) or at a -1 in prompt_ids; optional temperature, top_k, top_p, min_p, frequency_penalty and\n"
              "    presence_penalty (-2 to 2, OpenAI's, over the reply's tokens), logit_bias ({\"token id\": bias},\n"
              "    -100 to 100), seed, stop, stream, and end_tokens: ids that end the reply besides the vocabulary's\n"
              "    EOS),\n"
              "    answered by a line per token {\"id\", \"token\", \"text\"} and a last {\"id\", \"done\": true, ...},\n"
              "    or one {\"id\", \"error\"} line;\n"
              "  a control line, answered by one \"CTL ...\" line saying what was done or why not:\n"
              "    PEER_DETACH, PEER_ATTACH (the peer card of runtime.peer_device, between two windows),\n"
              "    POOL_HOLD n, LINK_SERVE 0|1, CANCEL [id] (the running request, or request id, stops at its next\n"
              "    token; one that has not started will not start).\n"
              "The last conversation stays in the KV cache: a request that starts with it feeds only the rest.\n"
              "A first line {\"event\": \"ready\", ...} says the engine is loaded. The process ends at the end of input.");
  LaunchOptions launch_options;
  launch_options.declare(p);
  std::string model;
  p.option("-m|--model", "FILE", "the GGUF model (overrides the launch's model)", &model);
  std::string mmproj;
  p.option("--mmproj", "FILE", "the model's vision projector (mmproj GGUF), for requests' images (overrides the launch's "
           "mmproj)", &mmproj);
  std::string link_file, link_role;
  p.option("--peer-link", "FILE", "the peer link's file (on /dev/shm), shared with the other engine of the pair "
           "(plugins.peerlink: enabled, file)", &link_file);
  p.option("--peer-link-role", "0|1", "this engine's role on the peer link (plugins.peerlink.role; default 0)", &link_role);
  if (!p.parse(args)) return 0;
  if (p.given("--peer-link-role") && !p.given("--peer-link")) {
    throw UsageError("--peer-link-role needs --peer-link FILE (the link file both engines of the pair share)");
  }
  if (p.given("--peer-link-role") && link_role != "0" && link_role != "1") {
    throw UsageError("--peer-link-role " + link_role + ": give 0 or 1 (one engine of the pair each)");
  }
  LaunchContext ctx = launch_options.resolve(false);
  if (p.given("--model")) ctx.launch.model = std::filesystem::absolute(model).string();
  if (p.given("--mmproj")) ctx.launch.mmproj = std::filesystem::absolute(mmproj).string();
  if (p.given("--peer-link")) {
    // As plugins: peerlink: {enabled: true, file: FILE, role: N} would (the flags win over the launch's section).
    config::PluginEntry* entry = nullptr;
    for (config::PluginEntry& e : ctx.launch.plugins) {
      if (e.name == "peerlink") entry = &e;
    }
    if (entry == nullptr) entry = &ctx.launch.plugins.emplace_back(config::PluginEntry{"peerlink", true, {}});
    entry->enabled = true;
    std::erase_if(entry->options, [&](const auto& kv) {
      return kv.first == "file" || (p.given("--peer-link-role") && kv.first == "role");
    });
    entry->options.emplace_back("file", std::filesystem::absolute(link_file).string());
    const bool has_role = std::any_of(entry->options.begin(), entry->options.end(), [](const auto& kv) { return kv.first == "role"; });
    if (p.given("--peer-link-role") || !has_role) entry->options.emplace_back("role", link_role.empty() ? "0" : link_role);
  }
  std::unique_ptr<Engine> engine = Engine::from_launch(ctx.launch);
  const std::unique_ptr<vision::Projector> projector = load_projector(ctx.launch.mmproj, engine->model());
  CompletionOptions defaults;
  defaults.max_tokens = ctx.launch.sampling.n_predict;
  defaults.sampling = sampling_from(ctx.launch.sampling);
  // speculative.draft: every request decodes in verify windows (the draft outlives the requests).
  const std::unique_ptr<Draft> draft = make_draft(ctx.launch, *engine);
  defaults.draft = draft.get();
  defaults.draft_n_max = draft ? static_cast<uint32_t>(ctx.launch.speculative.n_max) : 0;
  const uint32_t n_vocab = engine->model().hparams().n_vocab;

  LineInbox inbox;
  Session session;
  emit(dump(json{{"event", "ready"},
                 {"model", std::filesystem::path(*ctx.launch.model).filename().string()},
                 {"backend", engine->backend().describe()},
                 {"hybrid", engine->hybrid()}}));
  std::string line;
  while (inbox.next(line)) {
    if (!LineInbox::is_request(line)) {
      emit(answer_control(*engine, session, line));
      continue;
    }
    const protocol::ParsedRequest parsed = protocol::parse_engine_request(line, defaults, n_vocab);
    if (!parsed.request) {
      emit(dump(json{{"id", json::parse(parsed.id, nullptr, false)}, {"error", parsed.error}}));
      continue;
    }
    if (session.take_cancelled(parsed.request->id)) {
      emit(dump(json{{"id", json::parse(parsed.request->id)}, {"done", true}, {"finish_reason", "cancelled"},
                     {"prompt_tokens", 0}, {"reused_tokens", 0}, {"generated_ids", json::array()}, {"text", ""},
                     {"prompt_seconds", 0.0}, {"decode_seconds", 0.0}}));
      continue;
    }
    try {
      run_request(*engine, session, inbox, *parsed.request, projector.get());
    } catch (const Error& e) {
      // The engine stays: a request that does not fit the context, say, fails alone.
      emit(dump(json{{"id", json::parse(parsed.request->id)}, {"error", e.what()}}));
    }
  }
  // What the hybrid path did over the process's life (the cache, the sources, the peer card and the link), on stderr.
  if (engine->hybrid()) std::fprintf(stderr, "%s", engine->expert_summary().c_str());
  return 0;
}

}  // namespace strata::cli
