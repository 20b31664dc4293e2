// SeedSequence: a bit-exact port of numpy's np.random.SeedSequence (numpy >= 1.17).
// Entropy and spawn-key integers are split into 32-bit words least-significant
// first, exactly as numpy coerces Python ints, so
//   SeedSequence(e, key).generate_state_u64(4) == SeedSequence(e, spawn_key=key)
//                                                 .generate_state(4, np.uint64)
// An immutable value once constructed (spawn() counts children, as numpy's does);
// not shared between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace seedloader {

class SeedSequence {
 public:
  static constexpr std::size_t kDefaultPoolSize = 4;

  // Entropy as one non-negative integer (numpy: SeedSequence(int)).
  explicit SeedSequence(std::uint64_t entropy, std::vector<std::uint64_t> spawn_key = {},
                        std::size_t pool_size = kDefaultPoolSize);
  // Entropy as a list of integers (numpy: SeedSequence([w0, w1, ...])); each element
  // may exceed 32 bits and is split like a Python int.
  SeedSequence(std::span<const std::uint64_t> entropy_words,
               std::vector<std::uint64_t> spawn_key = {},
               std::size_t pool_size = kDefaultPoolSize);

  std::vector<std::uint32_t> generate_state_u32(std::size_t n_words) const;
  std::vector<std::uint64_t> generate_state_u64(std::size_t n_words) const;

  // Children with spawn_key + (n_children_spawned + i,), as numpy's spawn(n).
  std::vector<SeedSequence> spawn(std::size_t n);

  const std::vector<std::uint64_t>& spawn_key() const { return spawn_key_; }
  std::size_t n_children_spawned() const { return n_children_spawned_; }

 private:
  void mix_entropy(std::vector<std::uint32_t> entropy_words);

  std::vector<std::uint64_t> entropy_;  // as given, kept for spawn()
  std::vector<std::uint64_t> spawn_key_;
  std::size_t pool_size_;
  std::size_t n_children_spawned_ = 0;
  std::vector<std::uint32_t> pool_;
};

}  // namespace seedloader
