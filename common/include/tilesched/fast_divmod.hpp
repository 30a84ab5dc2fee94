// Division by a divisor known on the host, done on the device with a multiply-high and two shifts
// instead of an integer division (tens of instructions on a GPU). The scheduler maps every index
// it hands out through two of these (by T and by H), so the kernel's advance does no `/` or `%`.
//
// The method is Granlund and Montgomery's ("Division by invariant integers using
// multiplication", PLDI 1994, figure 4.1): with l = ceil(log2 d) and m = floor(2^32 (2^l - d) / d)
// + 1, which fits in 32 bits,
//   n / d = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0),   t = mulhi(m, n),
// exact for every 32-bit n and every d >= 1, with no intermediate wider than 32 bits.
// tests/common/test_fast_divmod.cpp checks it against `/` and `%`.
#pragma once

#include <cstdint>

#include "tilesched/config.hpp"

namespace tilesched {

class FastDivmod {
 public:
  constexpr FastDivmod() = default;  // division by 1

  // Prepared on the host. A divisor of 0 (a problem with no work, which validation rejects
  // before any index is mapped) is taken as 1 so that nothing traps.
  TS_HOST_DEVICE constexpr explicit FastDivmod(u32 d) : divisor_(d == 0 ? 1 : d) {
    const std::uint64_t dd = divisor_;
    u32 l = 0;
    while ((std::uint64_t{1} << l) < dd) ++l;  // l = ceil(log2 d), at most 32
    multiplier_ =
        static_cast<u32>(((std::uint64_t{1} << 32) * ((std::uint64_t{1} << l) - dd)) / dd + 1);
    shift1_ = l < 1 ? l : 1;
    shift2_ = l > 0 ? l - 1 : 0;
  }

  TS_HOST_DEVICE constexpr u32 divisor() const { return divisor_; }

  // n / divisor.
  TS_HOST_DEVICE constexpr u32 div(u32 n) const {
    const u32 t = static_cast<u32>((std::uint64_t{multiplier_} * n) >> 32);
    return (t + ((n - t) >> shift1_)) >> shift2_;
  }

  // n / divisor, with n % divisor in `remainder`.
  TS_HOST_DEVICE constexpr u32 divmod(u32 n, u32& remainder) const {
    const u32 q = div(n);
    remainder = n - q * divisor_;
    return q;
  }

 private:
  u32 divisor_ = 1;
  u32 multiplier_ = 1;
  u32 shift1_ = 0;
  u32 shift2_ = 0;
};

}  // namespace tilesched
