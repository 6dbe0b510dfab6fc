// Storage faults for the projections suite: a SQLite VFS shim, registered as the default VFS
// while a StorageFaults object lives, that fails the file-lock and shared-memory-lock calls of
// every connection opened meanwhile (the store's writer, readers and watchers), on demand.
// A failed lock is what a storage hiccup looks like to SQLite: every read and write fails with
// an I/O error until the locks work again.
//
// Thread-safety: fail_all(), fail_calls() and failures() may be called from any thread. One
// StorageFaults at a time per process; the store must be opened after it and closed before it.
#pragma once

#include <cstdint>

namespace factum::test {

class StorageFaults {
 public:
  StorageFaults();
  ~StorageFaults();
  StorageFaults(const StorageFaults&) = delete;
  StorageFaults& operator=(const StorageFaults&) = delete;

  // While on: every lock and shm-lock call fails with SQLITE_IOERR_*.
  void fail_all(bool on);
  // Lets `skip` lock calls through, then fails the next `count` ones.
  void fail_calls(std::uint64_t skip, std::uint64_t count);
  // Failures fail_calls() has yet to make.
  std::uint64_t remaining() const;
  // Lock calls failed so far.
  std::uint64_t failures() const;
};

}  // namespace factum::test
