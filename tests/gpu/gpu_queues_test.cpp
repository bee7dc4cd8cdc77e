// Backend 1.2 on a GPU (ctest label `gpu`): a copy on its own stream ordered before ops on the compute stream by
// an event; events report completion; host memory registers (a read-only file mapping included, or a reason why
// not) and copies from it arrive intact; bad arguments are statuses with messages, never crashes.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_support.hpp"
#include "strata/backend.hpp"
#include "strata/error.hpp"
#include "strata/op_tensor.hpp"
#include "strata/reference_backend.hpp"
#include "strata/device_queues.hpp"

namespace {

using strata::gpu_tests::gpu_backend;
using strata::gpu_tests::plugins;

std::unique_ptr<strata::Backend> open_gpu() {
  std::string why;
  const std::string gpu = gpu_backend(why);
  if (gpu.empty()) return nullptr;
  return strata::make_plugin_backend(plugins().instantiate(gpu));
}

strata_op add_op(float* dst, const float* a, const float* b, int64_t n) {
  strata_op op{};
  op.struct_size = sizeof op;
  op.kind = STRATA_OP_ADD;
  op.dst = strata::tensor_f32(dst, {n});
  op.src[0] = strata::tensor_f32(a, {n});
  op.src[1] = strata::tensor_f32(b, {n});
  for (int i = 2; i < 4; ++i) op.src[i] = strata::no_tensor();
  return op;
}

// 256 MiB crosses the link in milliseconds, far longer than the ADD takes to start: without the event the ADD
// would read the zeros that were there before.
TEST(GpuQueues, CopyStreamEventOrdersTheComputeStream) {
  auto be = open_gpu();
  if (!be) GTEST_SKIP() << "no usable GPU backend";
  strata::DeviceQueues* q = be->device_queues();
  ASSERT_NE(q, nullptr) << be->describe() << " has no streams (backend 1.2)";
  strata::DeviceMemory& mem = *be->device_memory();
  constexpr int64_t n = int64_t{64} << 20;
  const uint64_t bytes = n * sizeof(float);
  strata::Buffer<float> a(n, &mem), b(n, &mem), sum(n, &mem);
  std::vector<float> host_a(n), zeros(n, 0.0f);
  std::iota(host_a.begin(), host_a.end(), 0.0f);
  mem.upload(a.data(), host_a.data(), bytes);
  mem.upload(b.data(), zeros.data(), bytes);

  // The source must be page-locked for the copy to be asynchronous: register a plain host vector.
  std::vector<float> src(n);
  for (int64_t i = 0; i < n; ++i) src[i] = static_cast<float>(i % 1000) + 0.5f;
  strata::HostRegistration reg(*q, src.data(), bytes, /*read_only=*/true);
  ASSERT_TRUE(reg.locked()) << reg.why();

  strata::DeviceStream copies(*q);
  strata::DeviceEvent landed(*q), finished(*q);
  q->copy_async(b.data(), src.data(), bytes, STRATA_COPY_HOST_TO_DEVICE, copies.get());
  q->record(landed.get(), copies.get());
  q->wait(nullptr, landed.get());
  const strata_op op = add_op(sum.data(), a.data(), b.data(), n);
  q->compute_async({&op, 1});
  q->record(finished.get(), nullptr);
  q->synchronize(finished.get());
  EXPECT_TRUE(q->done(finished.get()));
  EXPECT_TRUE(q->done(landed.get()));

  std::vector<float> got(n);
  mem.download(got.data(), sum.data(), bytes);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += got[i] != host_a[i] + src[i];
  EXPECT_EQ(wrong, 0) << "values of the ADD did not see the copied rows";
}

// Progress on stderr: a driver call that never returns shows where it stopped.
void step(const char* what) {
  std::fprintf(stderr, "  [queues] %s\n", what);
  std::fflush(stderr);
}

// The experts' host arena may be a file on tmpfs (shared by two engines): a read-only mapping of it, at an
// unaligned offset, registers and copies intact (or, where the driver cannot lock it, gives the reason). A
// mapping of a file on a disk file system is not tested: on the H200 machine (driver for CUDA 13) registering
// one never returned (docs/ARCHITECTURE.md, "Registered host memory").
void copy_from_file_mapping(const std::filesystem::path& dir) {
  auto be = open_gpu();
  if (!be) GTEST_SKIP() << "no usable GPU backend";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " does not exist here";
  strata::DeviceQueues* q = be->device_queues();
  ASSERT_NE(q, nullptr);
  const std::filesystem::path path = dir / "strata_gpu_queues_file.bin";
  constexpr size_t file_bytes = (size_t{8} << 20) + 123;
  std::vector<unsigned char> content(file_bytes);
  for (size_t i = 0; i < file_bytes; ++i) content[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(content.data(), 1, file_bytes, f), file_bytes);
    std::fclose(f);
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* map = ::mmap(nullptr, file_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(map, MAP_FAILED);
  const auto* base = static_cast<const unsigned char*>(map);
  constexpr size_t offset = 100, len = (size_t{5} << 20) + 7;
  {
    step("register");
    strata::HostRegistration reg(*q, const_cast<unsigned char*>(base + offset), len, /*read_only=*/true);
    std::fprintf(stderr, "  [queues] read-only mapping in %s: %s\n", dir.c_str(),
                 reg.locked() ? "page-locked" : ("not locked: " + reg.why()).c_str());
    if (!reg.locked()) {
      EXPECT_FALSE(reg.why().empty());
    }
    strata::DeviceMemory& mem = *be->device_memory();
    strata::Buffer<unsigned char> dev(len, &mem);
    strata::DeviceStream copies(*q);
    strata::DeviceEvent landed(*q);
    step("copy");
    q->copy_async(dev.data(), base + offset, len, STRATA_COPY_HOST_TO_DEVICE, copies.get());
    q->record(landed.get(), copies.get());
    step("wait");
    q->synchronize(landed.get());
    std::vector<unsigned char> got(len);
    mem.download(got.data(), dev.data(), len);
    EXPECT_EQ(0, std::memcmp(got.data(), content.data() + offset, len));
    step("unregister");
  }
  step("done");
  ::munmap(map, file_bytes);
  std::filesystem::remove(path);
}

TEST(GpuQueues, ReadOnlyTmpfsMappingCopiesIntact) { copy_from_file_mapping("/dev/shm"); }

// Backend 1.8: slices of registered memory at odd offsets and lengths, enqueued as one batch, land where each was
// sent (an expert of a mapped file is three such slices); the batch is ordered after the stream's earlier copy,
// which wrote the same places first.
TEST(GpuQueues, ABatchOfCopiesLandsLikeCopiesOneByOne) {
  auto be = open_gpu();
  if (!be) GTEST_SKIP() << "no usable GPU backend";
  strata::DeviceQueues* q = be->device_queues();
  ASSERT_NE(q, nullptr);
  strata::DeviceMemory& mem = *be->device_memory();
  constexpr size_t bytes = size_t{24} << 20;
  std::vector<unsigned char> src(bytes), zeros(bytes, 0);
  for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>((i * 2654435761u) >> 11);
  strata::HostRegistration reg(*q, src.data(), bytes, /*read_only=*/true);
  ASSERT_TRUE(reg.locked()) << reg.why();
  strata::HostRegistration reg_zeros(*q, zeros.data(), bytes, /*read_only=*/true);
  ASSERT_TRUE(reg_zeros.locked()) << reg_zeros.why();
  strata::Buffer<unsigned char> dev(bytes, &mem);
  std::vector<void*> dsts;
  std::vector<const void*> srcs;
  std::vector<uint64_t> sizes;
  // 37 slices of growing odd lengths, each read at an offset of its own and written at another (the gaps differ),
  // so that a slice written to the wrong place, or too long, shows.
  std::vector<std::pair<size_t, size_t>> slices;  // (offset, length)
  for (size_t at = 3, len = 4093; slices.size() < 37; at += len + 29, len += 12289) slices.push_back({at, len});
  ASSERT_LE(slices.back().first + slices.back().second, bytes);
  std::vector<size_t> to(slices.size());
  for (size_t i = 0, place = 1; i < slices.size(); ++i) {
    to[i] = place;
    place += slices[i].second + 17;
  }
  ASSERT_LE(to.back() + slices.back().second, bytes);
  for (size_t i = 0; i < slices.size(); ++i) {
    dsts.push_back(dev.data() + to[i]);
    srcs.push_back(src.data() + slices[i].first);
    sizes.push_back(slices[i].second);
  }
  strata::DeviceStream copies(*q);
  strata::DeviceEvent landed(*q);
  q->copy_async(dev.data(), zeros.data(), bytes, STRATA_COPY_HOST_TO_DEVICE, copies.get());
  q->copy_batch_async(dsts, srcs, sizes, STRATA_COPY_HOST_TO_DEVICE, copies.get());
  q->record(landed.get(), copies.get());
  q->synchronize(landed.get());
  std::vector<unsigned char> got(bytes);
  mem.download(got.data(), dev.data(), bytes);
  for (size_t i = 0; i < slices.size(); ++i) {
    EXPECT_EQ(0, std::memcmp(got.data() + to[i], src.data() + slices[i].first, slices[i].second)) << "slice " << i;
    if (i + 1 < slices.size()) {
      for (size_t g = to[i] + slices[i].second; g < to[i + 1]; ++g) ASSERT_EQ(got[g], 0) << "byte " << g << " between slices";
    }
  }
}

TEST(GpuQueues, BadArgumentsAreMessages) {
  auto be = open_gpu();
  if (!be) GTEST_SKIP() << "no usable GPU backend";
  strata::DeviceQueues* q = be->device_queues();
  ASSERT_NE(q, nullptr);
  std::string why;
  EXPECT_FALSE(q->register_host(nullptr, 4096, false, why));
  EXPECT_NE(why.find("pointer"), std::string::npos) << why;
  std::vector<char> twice(1 << 16);
  strata::HostRegistration first(*q, twice.data(), twice.size(), false);
  ASSERT_TRUE(first.locked()) << first.why();
  why.clear();
  EXPECT_FALSE(q->register_host(twice.data(), twice.size(), false, why));
  EXPECT_NE(why.find("registered already"), std::string::npos) << why;
  int unknown = 0;
  q->unregister_host(&unknown);  // ignored
  try {
    q->record(nullptr, nullptr);
    ADD_FAILURE() << "recording a NULL event must fail";
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("NULL"), std::string::npos) << e.what();
  }
  // An op the plugin cannot run is refused by compute_async too, naming it.
  strata_op bad{};
  bad.struct_size = sizeof bad;
  bad.kind = static_cast<strata_op_kind>(999);
  try {
    q->compute_async({&bad, 1});
    ADD_FAILURE() << "an unknown op kind must be refused";
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("op 0"), std::string::npos) << e.what();
  }
  // An event never recorded counts as done.
  strata::DeviceEvent idle(*q);
  EXPECT_TRUE(q->done(idle.get()));
}

// WAIT and SIGNAL (backend 1.3) on the GPU, in mapped memory: a program SIGNALs, then WAITs for a flag the host
// raises later, then COPYs what the host wrote before raising it; the stream is not done before the flag is raised,
// and the copy sees the host's value. Replayed (the second call is a captured graph) with the flags reset.
TEST(GpuQueues, ProgramWaitsForTheHostsFlag) {
  auto be = open_gpu();
  if (!be) GTEST_SKIP() << "no usable GPU backend";
  strata::DeviceQueues* q = be->device_queues();
  ASSERT_NE(q, nullptr);
  strata::DeviceMemory& mem = *be->device_memory();
  auto flags = strata::Buffer<int32_t>::mapped(2, mem);  // [0] the device's, [1] the host's
  auto payload = strata::Buffer<int32_t>::mapped(1, mem);
  strata::Buffer<int32_t> on_device(1, &mem);
  strata_op ops[3]{};
  for (strata_op& op : ops) {
    op.struct_size = sizeof op;
    for (strata_tensor& t : op.src) t = strata::no_tensor();
  }
  ops[0].kind = STRATA_OP_SIGNAL;
  ops[0].dst = strata::tensor_i32(flags.data(), {1});
  ops[0].i[0] = 1;
  ops[1].kind = STRATA_OP_WAIT;
  ops[1].src[0] = strata::tensor_i32(flags.data() + 1, {1});
  ops[1].i[0] = 1;
  ops[2].kind = STRATA_OP_COPY;
  ops[2].src[0] = strata::tensor_i32(payload.data(), {1});
  ops[2].dst = strata::tensor_i32(on_device.data(), {1});
  for (const strata_op& op : ops) ASSERT_TRUE(be->supports(op)) << strata::op_kind_name(op.kind);
  strata::DeviceEvent done(*q);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::atomic_ref<int32_t>(flags[0]).store(0);
    std::atomic_ref<int32_t>(flags[1]).store(0);
    payload[0] = 0;
    q->compute_async(ops);
    q->record(done.get(), nullptr);
    while (std::atomic_ref<int32_t>(flags[0]).load(std::memory_order_acquire) == 0) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(q->done(done.get())) << "the program went past its WAIT before the flag was raised";
    payload[0] = 1000 + round;
    std::atomic_ref<int32_t>(flags[1]).store(1, std::memory_order_release);
    q->synchronize(done.get());
    int32_t got = 0;
    mem.download(&got, on_device.data(), sizeof got);
    EXPECT_EQ(got, 1000 + round);
  }
}

}  // namespace
