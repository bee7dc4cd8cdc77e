#include "tensor_stream.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <span>
#include <thread>

#include "block_draw.hpp"

namespace strata::mkmodel {
namespace {

struct Chunk {
  size_t tensor;  // into the StreamTensor list
  uint64_t first;
  uint64_t count;
};

// Elements of a work unit: a block, or a random-stream group for plain types.
uint64_t unit_elements(format::GgmlType type) {
  const auto& tr = format::traits(type);
  return tr.quantized ? tr.block_elems : kPlainGroup;
}

}  // namespace

uint64_t stream_tensors(const gguf::Writer& writer, const std::vector<StreamTensor>& tensors,
                        const WriteOptions& options) {
  std::vector<Chunk> chunks;
  uint64_t total_bytes = 0;
  uint64_t largest = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const StreamTensor& st = tensors[t];
    const uint64_t unit = unit_elements(st.type);
    const uint64_t unit_bytes = format::row_bytes(st.type, unit);
    const uint64_t per_chunk = std::max<uint64_t>(1, options.chunk_bytes / unit_bytes) * unit;
    for (uint64_t first = 0; first < st.n_elements; first += per_chunk) {
      chunks.push_back({t, first, std::min(per_chunk, st.n_elements - first)});
      largest = std::max(largest, format::row_bytes(st.type, chunks.back().count));
    }
    total_bytes += writer.tensor_bytes(st.index);
  }

  std::atomic<size_t> next{0};
  std::atomic<uint64_t> done{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&]() {
    std::vector<uint8_t> buffer(largest);
    try {
      for (size_t c = next++; c < chunks.size() && !failed; c = next++) {
        const Chunk& ch = chunks[c];
        const StreamTensor& st = tensors[ch.tensor];
        const uint64_t bytes = format::row_bytes(st.type, ch.count);
        st.fill(ch.first, ch.count, buffer.data());
        writer.write_tensor_chunk(st.index, format::row_bytes(st.type, ch.first), std::span(buffer.data(), bytes));
        const uint64_t now = done += bytes;
        if (options.progress) options.progress(now, total_bytes);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };

  unsigned threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, std::max<size_t>(1, chunks.size())));
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return total_bytes;
}

}  // namespace strata::mkmodel
