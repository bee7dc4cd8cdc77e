// POST /v1/chat/completions and /v1/completions: the prompt rendered and encoded, checked against the context,
// queued as a Job, then answered whole or streamed as server-sent events from the job's channel.
#include <chrono>
#include <ctime>

#include "server_impl.hpp"
#include "strata/prompt_images.hpp"
#include "strata/sha256.hpp"
#include "strata/serve/responses.hpp"
#include "strata/serve/sse.hpp"

namespace strata::serve {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// How often a waiting HTTP thread looks at its client while no token comes.
constexpr std::chrono::milliseconds kPoll{100};

std::string concat_text(const std::vector<GeneratedToken>& tokens) {
  std::string text;
  for (const GeneratedToken& t : tokens) text += t.text;
  return text;
}

std::string finish_of(const JobOutcome& out) {
  return out.timed_out ? "length" : std::string(finish_reason(out.result.stop));
}

Usage usage_of(const JobOutcome& out) {
  return {out.prompt_tokens, out.result.generated_ids.size(), out.result.reused_tokens};
}

// How a reply is read for tool calls: not at all (no tools offered), or with the model's format, keeping only
// the first call when the request set parallel_tool_calls false.
struct ToolParsing {
  bool enabled = false;
  chat::ToolCallFormat format = chat::ToolCallFormat::none;
  bool first_call_only = false;
};

// The reply split by the model's tool-call format when the request offered tools; else its text as it is.
ReplyMessage message_of(const std::string& text, const ToolParsing& tools) {
  ReplyMessage m;
  if (!tools.enabled) {
    m.content = text;
    return m;
  }
  const chat::ParsedReply parsed = chat::parse_reply(tools.format, text);
  m.content = parsed.content;
  m.reasoning_content = parsed.reasoning_content;
  if (parsed.tool_calls.is_array() && !parsed.tool_calls.empty()) {
    m.tool_calls = parsed.tool_calls;
    if (tools.first_call_only && m.tool_calls.size() > 1) m.tool_calls.erase(m.tool_calls.begin() + 1, m.tool_calls.end());
  }
  return m;
}

// One streamed reply: called by httplib until it returns false or the sink is done.
struct Stream {
  std::shared_ptr<Job> job;
  ReplyFormat format;
  Endpoint endpoint;
  bool logprobs = false, include_usage = false;
  ToolParsing tools;
  bool started = false;
  std::string held;  // with tools: the whole text, parsed at the end

  bool write(httplib::DataSink& sink, const json& chunk) {
    const std::string event = sse_event(json_text(chunk));
    if (sink.write(event.data(), event.size())) return true;
    job->cancelled = true;
    return false;
  }

  bool pump(httplib::DataSink& sink) {
    if (!started) {
      started = true;
      if (endpoint == Endpoint::ChatCompletions && !write(sink, format.role_chunk())) return false;
    }
    ReplyChannel::Batch batch = job->channel.take(kPoll);
    if (!batch.tokens.empty()) {
      const std::string text = concat_text(batch.tokens);
      if (tools.enabled) {
        held += text;
      } else if ((!text.empty() || logprobs) && !write(sink, format.text_chunk(text, batch.tokens, logprobs))) {
        return false;
      }
    }
    if (!batch.outcome) {
      if (job->peer.gone()) {
        job->cancelled = true;
        return false;
      }
      return true;
    }
    const JobOutcome& out = *batch.outcome;
    if (out.error) {
      const std::string event = sse_event(error_body(*out.error));
      if (!sink.write(event.data(), event.size())) return false;
    } else {
      std::string finish = finish_of(out);
      if (tools.enabled) {
        const ReplyMessage m = message_of(held, tools);
        if (!m.tool_calls.is_null() && finish == "stop") finish = "tool_calls";
        if (!write(sink, format.message_chunk(m))) return false;
      }
      if (!write(sink, format.finish_chunk(finish))) return false;
      if (include_usage && !write(sink, format.usage_chunk(usage_of(out)))) return false;
    }
    if (!sink.write(kSseDone.data(), kSseDone.size())) return false;
    sink.done();
    return true;
  }
};

}  // namespace

std::optional<ApiError> Server::Impl::place_images(const CompletionRequest& r, const std::string& rendered, Job& job) {
  if (options.projector == nullptr) {
    return invalid_request("this server has no vision projector, so it takes no images: start it with --mmproj FILE "
                           "(or mmproj: in the launch), the model's mmproj GGUF",
                           r.images.front().param, "images_unsupported");
  }
  std::vector<Sha256Digest> digests;
  std::vector<Engine::ImageTokens> tokens;
  const vision::ProjectorInfo& info = options.projector->info();
  const uint32_t side = info.patch_size * info.merge;
  for (const ImagePart& part : r.images) {
    vision::Image image;
    try {
      image = vision::decode_image(part.bytes, "'" + part.param + "'");
    } catch (const Error& e) {
      return invalid_request(e.what(), part.param, "invalid_image");
    }
    // Resized and normalized here; the rows come from the engine's thread (EngineWorker), on its backend.
    job.image_inputs.push_back(options.projector->preprocess(image));
    job.image_urls.push_back(part.url);
    digests.push_back(sha256(part.bytes));
    const vision::Size size = job.image_inputs.back().size;
    const uint32_t nx = size.width / side, ny = size.height / side;
    tokens.push_back(Engine::ImageTokens{{}, nx, ny, std::max(nx, ny)});
    job.image_tokens += size_t{nx} * ny;
  }
  job.projector = options.projector;
  try {
    job.prompt = encode_with_images(model.tokenizer(), rendered, tokens,
                                    [&](std::string_view piece, bool first) { return chat.encode_piece(piece, first); },
                                    job.options.images);
  } catch (const Error& e) {
    // The template dropped or repeated a marker (a message it does not render).
    return invalid_request(std::string("the images could not be placed in the rendered prompt: ") + e.what(),
                           "messages", "template_error");
  }
  job.cache_key = keyed_prompt(job.prompt, job.options.images, digests);
  return std::nullopt;
}

void Server::Impl::completion(Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
  const auto arrival = Clock::now();
  Parsed<CompletionRequest> parsed = parse_completion_request(endpoint, req.body, options.model_name);
  if (const ApiError* e = std::get_if<ApiError>(&parsed)) return send_error(res, *e);
  const CompletionRequest& r = std::get<CompletionRequest>(parsed);
  const bool is_chat = endpoint == Endpoint::ChatCompletions;
  const Tokenizer& tok = model.tokenizer();

  auto job = std::make_shared<Job>();
  job->arrival = arrival;
  job->deadline = arrival + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.request_timeout_s));
  CompletionOptions& o = job->options;
  // tool_choice "none": the model is not offered the tools, and its reply is not read for calls.
  const bool offer_tools = is_chat && r.tools.is_array() && r.tool_choice != ToolChoice::None;
  if (is_chat) {
    std::string rendered;
    try {
      rendered = chat.render(r.messages, offer_tools ? r.tools : nlohmann::ordered_json(), true);
    } catch (const chat::TemplateError& e) {
      return send_error(res, invalid_request(std::string("the chat template rejected the messages: ") + e.what(),
                                             "messages", "template_error"));
    }
    if (r.images.empty()) {
      job->prompt = chat.encode(rendered);
    } else if (const std::optional<ApiError> refused = place_images(r, rendered, *job)) {
      return send_error(res, *refused);
    }
    o.end_tokens = chat.end_tokens();
    o.stop = chat.end_texts();
  } else {
    // As `strata run` encodes a raw prompt, so that greedy replies match it token for token.
    job->prompt = tok.encode(r.prompt, {.add_bos = true, .add_eos = false, .parse_special = false});
    const size_t bos = !job->prompt.empty() && job->prompt.front() == tok.bos() ? 1 : 0;
    o.strip_leading_space = job->prompt.size() == bos && tok.add_space_prefix();
  }
  const std::string prompt_param = is_chat ? "messages" : "prompt";
  if (job->prompt.empty()) {
    return send_error(res, invalid_request("the prompt encodes to no tokens", prompt_param, "empty_prompt"));
  }
  if (job->prompt.size() >= context) {
    return send_error(res, invalid_request("the prompt has " + std::to_string(job->prompt.size()) +
                                               " tokens; the context holds " + std::to_string(context) +
                                               " (runtime.context), the reply included",
                                           prompt_param, "context_length_exceeded"));
  }
  o.max_tokens = r.max_tokens.value_or(options.max_tokens);
  o.sampling = options.sampling;
  if (r.temperature) o.sampling.temperature = static_cast<float>(*r.temperature);
  if (r.top_p) o.sampling.top_p = static_cast<float>(*r.top_p);
  if (r.top_k) o.sampling.top_k = *r.top_k;
  if (r.min_p) o.sampling.min_p = static_cast<float>(*r.min_p);
  if (r.repeat_penalty) o.sampling.repeat_penalty = static_cast<float>(*r.repeat_penalty);
  if (r.seed) o.sampling.seed = *r.seed;
  if (r.frequency_penalty) o.sampling.frequency_penalty = static_cast<float>(*r.frequency_penalty);
  if (r.presence_penalty) o.sampling.presence_penalty = static_cast<float>(*r.presence_penalty);
  for (const auto& [id, bias] : r.logit_bias) {
    if (static_cast<uint64_t>(id) >= tok.size()) {
      return send_error(res, invalid_request("'logit_bias' names token " + std::to_string(id) +
                                                 ", outside this model's vocabulary (ids 0 to " +
                                                 std::to_string(tok.size() - 1) + ")",
                                             "logit_bias"));
    }
    o.sampling.logit_bias.emplace_back(static_cast<TokenId>(id), static_cast<float>(bias));
  }
  o.sampling.forced = forced_reply;
  o.stop.insert(o.stop.end(), r.stop.begin(), r.stop.end());
  o.logprobs = r.logprobs;
  o.top_logprobs = r.top_logprobs;
  // Speculation: the launch's default, or the request's own n_max (0: off).
  if (r.speculative_n_max && *r.speculative_n_max > 0) {
    if (options.draft == nullptr && options.draft_in_lanes) {
      return send_error(res, invalid_request("'speculative': the elastic desk's engines decode with the launch's "
                                             "speculative.* and take no request's n_max; leave the field out",
                                             "speculative"));
    }
    if (options.draft == nullptr) {
      return send_error(res, invalid_request("'speculative' asks for drafts, and this server's launch has "
                                             "speculative.draft: off (start it with -o speculative.draft=ngram or "
                                             "model), or send speculative: false",
                                             "speculative"));
    }
    if (static_cast<uint32_t>(*r.speculative_n_max) > options.draft_n_limit) {
      return send_error(res, invalid_request("'speculative.n_max' is " + std::to_string(*r.speculative_n_max) +
                                                 "; this server's verify windows take at most " +
                                                 std::to_string(options.draft_n_limit) +
                                                 " drafts (raise speculative.n_max in its launch)",
                                             "speculative"));
    }
  }
  o.draft = options.draft;
  o.draft_n_max = options.draft == nullptr ? 0
                  : r.speculative_n_max ? static_cast<uint32_t>(*r.speculative_n_max)
                                        : options.draft_n_max;
  job->pcie_frac = r.pcie_frac;
  job->peer = PeerWatch::find(req.remote_addr, req.remote_port, req.local_port);

  if (const std::optional<ApiError> refused = runner->refuse(*job)) return send_error(res, *refused);
  if (!runner->submit(job)) {
    return send_error(res, {503, "the server is busy: " + std::to_string(options.queue) +
                                     " requests are waiting (serve.queue); retry later",
                            "server_error", {}, "queue_full"});
  }
  const std::string id = (is_chat ? "chatcmpl-" : "cmpl-") + std::to_string(created) + "-" +
                         std::to_string(next_reply.fetch_add(1));
  ReplyFormat format(endpoint, id, options.model_name, static_cast<int64_t>(std::time(nullptr)), tok);
  const ToolParsing tools{offer_tools, tool_format, !r.parallel_tool_calls};

  if (r.stream) {
    auto stream = std::make_shared<Stream>(Stream{job, std::move(format), endpoint, r.logprobs, r.include_usage,
                                                  tools, false, {}});
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [stream](size_t, httplib::DataSink& sink) { return stream->pump(sink); },
        [job](bool success) {
          if (!success) job->cancelled = true;
        });
    return;
  }

  std::vector<GeneratedToken> tokens;
  std::optional<JobOutcome> outcome;
  while (!outcome) {
    ReplyChannel::Batch batch = job->channel.take(kPoll);
    tokens.insert(tokens.end(), std::make_move_iterator(batch.tokens.begin()), std::make_move_iterator(batch.tokens.end()));
    outcome = std::move(batch.outcome);
    if (!outcome && job->peer.gone()) job->cancelled = true;
  }
  if (outcome->error) return send_error(res, *outcome->error);
  std::string finish = finish_of(*outcome);
  const ReplyMessage message = message_of(outcome->result.text, tools);
  send_json(res, 200, format.reply(message, tokens, r.logprobs, finish, usage_of(*outcome)));
}

}  // namespace strata::serve
