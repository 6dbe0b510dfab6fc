// Injected storage faults (tests/support/fault_vfs.hpp) on the writer, reads and opening: each
// fault gives a clear StorageError, loses nothing acknowledged, writes nothing half, and
// leaves the store usable once the fault is gone.
#include <doctest/doctest.h>

#include "support/fault_vfs.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::FaultFile;
using factum::test::FaultInjection;
using factum::test::FaultOp;
using factum::test::make_event;
using factum::test::make_events;
using factum::test::TempStore;
namespace codes = factum::test::fault_codes;

namespace {

StoreOptions durable() {
  StoreOptions o;
  o.durability = Durability::full;
  return o;
}

}  // namespace

TEST_CASE("an fsync failure at commit fails the append with StorageError and writes nothing") {
  FaultInjection fault;
  TempStore t(durable());
  t.store.append("account-1", ExpectedVersion::no_stream(), make_events(2));
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync);
  try {
    t.store.append("account-1", ExpectedVersion::exact(2), make_events(3));
    FAIL("expected StorageError");
  } catch (const StorageError& e) {
    CHECK(e.kind() == StorageError::Kind::io);
    CHECK(std::string(e.what()).find(t.path.string()) != std::string::npos);
  }
  CHECK(fault.spent());
  CHECK(t.store.stream_version("account-1") == 2);
  CHECK(t.store.head_position() == 2);
  CHECK(t.store.append("account-1", ExpectedVersion::exact(2), make_event()).stream_version == 3);
  CHECK(t.store.verify().ok());
}
