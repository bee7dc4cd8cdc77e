// Internal: writes the tensors of an opened GGUF writer from many threads. Work is cut into chunks of whole
// blocks (whole random-stream groups for plain types); each thread fills a chunk in its own buffer and pwrites
// it, so memory stays at threads x chunk size whatever the model's size.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "strata/gguf.hpp"
#include "strata/mkmodel.hpp"

namespace strata::mkmodel {

struct StreamTensor {
  size_t index;  // the tensor's index in the writer
  format::GgmlType type;
  uint64_t n_elements;
  // Writes the bytes of elements [first, first + count) to out.
  std::function<void(uint64_t first, uint64_t count, uint8_t* out)> fill;
};

// Returns the number of tensor bytes written. Rethrows the first exception a worker raised.
uint64_t stream_tensors(const gguf::Writer& writer, const std::vector<StreamTensor>& tensors,
                        const WriteOptions& options);

}  // namespace strata::mkmodel
