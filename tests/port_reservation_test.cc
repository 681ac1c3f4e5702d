// Reserved loopback ports (cluster/port_reservation.h): below the kernel's ephemeral range, one holder at a time
// across processes (an flock per port), never a port something listens on, free again when released.
#include "cluster/port_reservation.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "tests/support/held_port.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

TEST(PortReservation, TheRangeIsBelowTheKernelsEphemeralPorts) {
  const PortRange r = reservable_ports();
  EXPECT_GE(r.low, 10000);
  EXPECT_GE(r.high - r.low, 2000);
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int lo = 0, hi = 0;
  if (in >> lo >> hi && lo > 12000) EXPECT_LE(r.high, lo);
}

TEST(PortReservation, APortHasOneHolderUntilReleased) {
  std::mt19937_64 rng(7);
  PortReservation a = reserve_loopback_port(rng);
  EXPECT_FALSE(PortReservation::try_reserve(a.port(), port_lock_dir()).has_value()) << a.port();
  const int port = a.port();
  { PortReservation gone = std::move(a); }
  EXPECT_TRUE(PortReservation::try_reserve(port, port_lock_dir()).has_value()) << port;
}

TEST(PortReservation, APortSomethingListensOnIsNotReserved) {
  testing_util::HeldPort held;
  ASSERT_GT(held.port, 0);
  TempDir dir;
  EXPECT_FALSE(PortReservation::try_reserve(held.port, dir.str()).has_value());
}

TEST(PortReservation, DrawsAreDistinctAndInTheRange) {
  std::mt19937_64 rng(1);
  std::vector<PortReservation> held;
  std::set<int> ports;
  const PortRange r = reservable_ports();
  for (int i = 0; i < 50; ++i) {
    held.push_back(reserve_loopback_port(rng));
    EXPECT_TRUE(ports.insert(held.back().port()).second) << held.back().port();
    EXPECT_GE(held.back().port(), r.low);
    EXPECT_LT(held.back().port(), r.high);
  }
}

}  // namespace
}  // namespace lockcheck
