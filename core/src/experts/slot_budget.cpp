#include "strata/experts/slot_budget.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "human_bytes.hpp"
#include "strata/error.hpp"

namespace strata::experts {

namespace {

uint64_t add_checked(uint64_t a, uint64_t b) {
  return b > std::numeric_limits<uint64_t>::max() - a ? std::numeric_limits<uint64_t>::max() : a + b;
}

// "the dense weights (3.2 GiB), KV cache (1.0 GiB), activations (40.0 MiB) and margin (512.0 MiB)"
std::string reserved_parts(const DeviceRoom& room) {
  std::vector<std::string> parts;
  const auto part = [&](const char* what, uint64_t bytes) {
    if (bytes > 0) parts.push_back(std::string(what) + " (" + human_bytes(bytes) + ")");
  };
  part("the dense weights", room.dense_bytes);
  if (room.kv_bytes > 0)
    parts.push_back("KV cache (" + human_bytes(room.kv_bytes) + (room.kv_what.empty() ? "" : ": " + room.kv_what) + ")");
  part("activations", room.activation_bytes);
  part("PCIe staging", room.staging_bytes);
  part("margin", room.margin_bytes);
  if (parts.empty()) return "nothing else";
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) text += i + 1 == parts.size() ? " and " : ", ";
    text += parts[i];
  }
  return text;
}

std::string percent_text(double percent) {
  char text[32];
  std::snprintf(text, sizeof text, "%g%%", percent);
  return text;
}

// Round-robin over the layers with experts, one slot each while it fits: equal counts per layer, and a last
// partial round for the first layers it fits.
std::vector<uint32_t> spread_slots(const ExpertGeometry& g, uint64_t budget) {
  std::vector<uint32_t> slots(g.layers.size(), 0);
  uint64_t remaining = budget;
  for (bool placed = true; placed;) {
    placed = false;
    for (size_t il = 0; il < g.layers.size(); ++il) {
      const LayerExperts& l = g.layers[il];
      if (l.n_expert == 0 || l.expert_bytes == 0 || slots[il] >= l.n_expert || l.expert_bytes > remaining) continue;
      ++slots[il];
      remaining -= l.expert_bytes;
      placed = true;
    }
  }
  return slots;
}

}  // namespace

uint64_t DeviceRoom::reserved_bytes() const {
  uint64_t total = 0;
  for (uint64_t part : {dense_bytes, kv_bytes, activation_bytes, staging_bytes, margin_bytes})
    total = add_checked(total, part);
  return total;
}

uint32_t SlotBudget::total_slots() const {
  uint32_t n = 0;
  for (const SlotClass& c : classes) n += c.n_slots;
  return n;
}

std::string SlotBudget::describe() const {
  std::string text = std::to_string(total_slots()) + " slots (" + human_bytes(used_bytes);
  if (routed_bytes > 0) {
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%",
                  100.0 * static_cast<double>(used_bytes) / static_cast<double>(routed_bytes));
    text += std::string(", ") + share + " of the routed experts' " + human_bytes(routed_bytes);
  }
  text += ")";
  if (classes.size() == 1) return text + " of " + human_bytes(classes[0].slot_bytes) + " each";
  if (classes.empty()) return text;
  text += " in " + std::to_string(classes.size()) + " classes: ";
  for (size_t i = 0; i < classes.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(classes[i].n_slots) + " x " + human_bytes(classes[i].slot_bytes);
  }
  return text;
}

void check_room(const DeviceRoom& room, const std::string& what, bool before_slots) {
  const uint64_t reserved = room.reserved_bytes();
  if (reserved <= room.free_bytes) return;
  const std::string has = room.cap_bytes > 0 ? "runtime.gpu_memory " + config::format_byte_size(room.cap_bytes) +
                                                   " leaves the engine " + human_bytes(room.free_bytes) + " of the device"
                                             : "the device has " + human_bytes(room.free_bytes) + " free";
  std::vector<std::string> fixes{"lower runtime.context"};
  if (room.kv_bytes > 0 && room.kv_what.find("q8_0") == std::string::npos) fixes.push_back("use runtime.kv_type q8_0");
  if (room.cap_bytes > 0) fixes.push_back("raise runtime.gpu_memory");
  fixes.push_back("use a device with more memory");
  std::string fix;
  for (size_t i = 0; i < fixes.size(); ++i) fix += (i == 0 ? "" : i + 1 == fixes.size() ? ", or " : ", ") + fixes[i];
  throw Error(what + ": " + has + ", but " + reserved_parts(room) + " need " + human_bytes(reserved) +
              (before_slots ? " before any expert slot: " : ": ") + fix);
}

std::string describe_split(const config::CacheSize& size, const DeviceRoom& room, const SlotBudget& slots) {
  std::string asked = "auto";
  if (size.kind == config::CacheSize::Kind::Percent) asked = percent_text(size.percent);
  if (size.kind == config::CacheSize::Kind::Bytes) asked = config::format_byte_size(size.bytes);
  std::string text = "experts.cache " + asked + ": " + human_bytes(room.free_bytes) +
                     (room.cap_bytes > 0 ? " (runtime.gpu_memory " + config::format_byte_size(room.cap_bytes) + ")"
                                         : " (free on the device)") +
                     " =";
  const char* sep = " ";
  const auto part = [&](const std::string& what, uint64_t bytes, const std::string& detail = {}) {
    text += sep + what + " " + human_bytes(bytes) + (detail.empty() ? "" : " (" + detail + ")");
    sep = " + ";
  };
  part("the dense weights", room.dense_bytes);
  part("KV cache", room.kv_bytes, room.kv_what);
  part("activations", room.activation_bytes);
  if (room.staging_bytes > 0) part("PCIe staging and the hybrid path's buffers", room.staging_bytes);
  part("margin", room.margin_bytes);
  std::string detail = std::to_string(slots.total_slots()) + " slots";
  if (slots.routed_bytes > 0) {
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%",
                  100.0 * static_cast<double>(slots.used_bytes) / static_cast<double>(slots.routed_bytes));
    detail += std::string(", ") + share + " of the routed experts' " + human_bytes(slots.routed_bytes);
  }
  part("expert slots", slots.used_bytes, detail);
  const uint64_t taken = add_checked(room.reserved_bytes(), slots.used_bytes);
  if (taken <= room.free_bytes) part("unused", room.free_bytes - taken);
  else text += " (over by " + human_bytes(taken - room.free_bytes) + ")";
  return text;
}

SlotBudget plan_slot_budget(const config::CacheSize& size, const ExpertGeometry& geometry, const DeviceRoom& room) {
  const uint64_t routed = geometry.routed_bytes();
  check_room(room, "experts.cache", true);
  const uint64_t room_left = room.free_bytes - room.reserved_bytes();

  uint64_t requested = 0;
  std::string asked;
  switch (size.kind) {
    case config::CacheSize::Kind::Auto: requested = room_left; break;
    case config::CacheSize::Kind::Percent: {
      if (!(size.percent >= 0.0 && size.percent <= 100.0))
        throw Error("experts.cache: " + percent_text(size.percent) + " is not a share between 0% and 100%");
      requested = static_cast<uint64_t>(std::floor(size.percent / 100.0 * static_cast<double>(routed)));
      asked = percent_text(size.percent) + " (" + human_bytes(requested) + " of the routed experts' " +
              human_bytes(routed) + ")";
      break;
    }
    case config::CacheSize::Kind::Bytes:
      requested = size.bytes;
      asked = config::format_byte_size(size.bytes);
      break;
  }
  const uint64_t wanted = std::min(requested, routed);
  if (size.kind != config::CacheSize::Kind::Auto && wanted > room_left)
    throw Error("experts.cache: " + asked + " is more than the " + human_bytes(room_left) + " free after " +
                reserved_parts(room) + "; lower it or use auto");

  SlotBudget b;
  b.budget_bytes = wanted;
  b.routed_bytes = routed;
  b.layer_slots = spread_slots(geometry, wanted);
  b.layer_class.assign(geometry.layers.size(), 0);
  std::map<uint64_t, uint32_t> class_of_size;
  for (size_t il = 0; il < geometry.layers.size(); ++il) {
    const LayerExperts& l = geometry.layers[il];
    if (l.n_expert == 0 || l.expert_bytes == 0) continue;
    auto [it, fresh] = class_of_size.try_emplace(l.expert_bytes, static_cast<uint32_t>(b.classes.size()));
    if (fresh) b.classes.push_back(SlotClass{l.expert_bytes, 0, 0, {}});
    SlotClass& c = b.classes[it->second];
    c.layers.push_back(static_cast<uint32_t>(il));
    c.n_slots += b.layer_slots[il];
    b.layer_class[il] = it->second;
  }
  uint32_t next = 0;
  for (SlotClass& c : b.classes) {
    c.first_slot = next;
    next += c.n_slots;
    b.used_bytes += uint64_t{c.n_slots} * c.slot_bytes;
  }
  return b;
}

}  // namespace strata::experts
