#include "seedloader/seed_sequence.h"

#include "seedloader/error.h"

namespace seedloader {
namespace {

// numpy/random/bit_generator.pyx constants (from O'Neill's seed_seq_fe).
constexpr std::uint32_t kInitA = 0x43b0d7e5;
constexpr std::uint32_t kMultA = 0x931e8875;
constexpr std::uint32_t kInitB = 0x8b51f9dd;
constexpr std::uint32_t kMultB = 0x58f38ded;
constexpr std::uint32_t kMixMultL = 0xca01f9dd;
constexpr std::uint32_t kMixMultR = 0x4973f715;
constexpr int kXShift = 16;

// A Python int becomes its 32-bit words, least significant first; 0 is one word.
void append_words(std::vector<std::uint32_t>& out, std::uint64_t value) {
  out.push_back(static_cast<std::uint32_t>(value));
  if (value >> 32) out.push_back(static_cast<std::uint32_t>(value >> 32));
}

std::vector<std::uint32_t> to_words(std::span<const std::uint64_t> values) {
  std::vector<std::uint32_t> words;
  for (std::uint64_t v : values) append_words(words, v);
  return words;
}

std::uint32_t mix(std::uint32_t x, std::uint32_t y) {
  std::uint32_t result = kMixMultL * x - kMixMultR * y;
  return result ^ (result >> kXShift);
}

}  // namespace

SeedSequence::SeedSequence(std::uint64_t entropy, std::vector<std::uint64_t> spawn_key,
                           std::size_t pool_size)
    : SeedSequence(std::span<const std::uint64_t>(&entropy, 1), std::move(spawn_key),
                   pool_size) {}

SeedSequence::SeedSequence(std::span<const std::uint64_t> entropy_words,
                           std::vector<std::uint64_t> spawn_key, std::size_t pool_size)
    : entropy_(entropy_words.begin(), entropy_words.end()),
      spawn_key_(std::move(spawn_key)),
      pool_size_(pool_size) {
  if (pool_size_ < 4) {
    throw ConfigError("SeedSequence: pool_size " + std::to_string(pool_size_) +
                      " is below numpy's minimum of 4");
  }
  std::vector<std::uint32_t> words = to_words(entropy_);
  if (!spawn_key_.empty()) {
    // numpy pads short entropy with zeros before appending the spawn key, so
    // that entropy 42 with key (0,) differs from entropy [42, 0] (gh-16539).
    if (words.size() < pool_size_) words.resize(pool_size_, 0);
    for (std::uint64_t k : spawn_key_) append_words(words, k);
  }
  mix_entropy(std::move(words));
}

void SeedSequence::mix_entropy(std::vector<std::uint32_t> entropy) {
  std::uint32_t hash_const = kInitA;
  auto hash = [&hash_const](std::uint32_t value) {
    value ^= hash_const;
    hash_const *= kMultA;
    value *= hash_const;
    return value ^ (value >> kXShift);
  };
  pool_.assign(pool_size_, 0);
  for (std::size_t i = 0; i < pool_size_; ++i) {
    pool_[i] = hash(i < entropy.size() ? entropy[i] : 0);
  }
  // Every pool word influences every other, so late entropy reaches early words.
  for (std::size_t src = 0; src < pool_size_; ++src) {
    for (std::size_t dst = 0; dst < pool_size_; ++dst) {
      if (src != dst) pool_[dst] = mix(pool_[dst], hash(pool_[src]));
    }
  }
  for (std::size_t src = pool_size_; src < entropy.size(); ++src) {
    for (std::size_t dst = 0; dst < pool_size_; ++dst) {
      pool_[dst] = mix(pool_[dst], hash(entropy[src]));
    }
  }
}

std::vector<std::uint32_t> SeedSequence::generate_state_u32(std::size_t n_words) const {
  std::vector<std::uint32_t> state(n_words);
  std::uint32_t hash_const = kInitB;
  for (std::size_t i = 0; i < n_words; ++i) {
    std::uint32_t value = pool_[i % pool_size_];
    value ^= hash_const;
    hash_const *= kMultB;
    value *= hash_const;
    state[i] = value ^ (value >> kXShift);
  }
  return state;
}

std::vector<std::uint64_t> SeedSequence::generate_state_u64(std::size_t n_words) const {
  // numpy views pairs of uint32 words as little-endian uint64.
  std::vector<std::uint32_t> halves = generate_state_u32(2 * n_words);
  std::vector<std::uint64_t> state(n_words);
  for (std::size_t i = 0; i < n_words; ++i) {
    state[i] = static_cast<std::uint64_t>(halves[2 * i]) |
               (static_cast<std::uint64_t>(halves[2 * i + 1]) << 32);
  }
  return state;
}

std::vector<SeedSequence> SeedSequence::spawn(std::size_t n) {
  std::vector<SeedSequence> children;
  children.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::uint64_t> key = spawn_key_;
    key.push_back(n_children_spawned_ + i);
    children.emplace_back(entropy_, std::move(key), pool_size_);
  }
  n_children_spawned_ += n;
  return children;
}

}  // namespace seedloader
