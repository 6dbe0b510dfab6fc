// Fault injection for tests, as LevelDB's tests use an error-injecting Env: a SQLite VFS shim
// that fails a chosen read, write, sync, lock or shared-memory call with the result code a
// test names (an I/O error, a full disk, a busy lock), deterministically.
//
//   FaultInjection fault;                 // first, so that it outlives every store
//   TempStore t(options);                 // its connections go through the shim
//   fault.fail(FaultOp::sync, 1, fault_codes::kIoErrFsync);  // the next sync fails, once
//   CHECK_THROWS_AS(t.store.append(...), StorageError);
//   fault.fail(FaultOp::write, 1, fault_codes::kFull, FaultInjection::kForever, FaultFile::wal);
//   ...                                   // every WAL write fails until
//   fault.clear();
//
// While a FaultInjection lives, the shim is SQLite's default VFS: every connection opened in
// the process without a VFS name (as factum opens them) goes through it, wrapping the VFS that
// was the default before. Without an armed fault it only counts calls. A connection opened
// while it lived keeps working (unfaulted) after it is destroyed; destroy stores first anyway.
// The result codes are SQLite's (SQLITE_IOERR_WRITE, SQLITE_FULL, SQLITE_BUSY, ...), given as
// plain ints so that this header does not include <sqlite3.h>; fault_codes below names the
// common ones.
//
// A storage hiccup (every lock failing for a while, or the Nth to Mth lock calls failing):
//
//   fault.fail_locks(1, FaultInjection::kForever);  // every lock call fails
//   fault.clear();                                 // until cleared
//
// Thread-safety: a FaultInjection may be armed, cleared and read from any thread while other
// threads use connections; one FaultInjection at a time per process.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace factum::test {

// The VFS and file calls the shim counts and can fail.
enum class FaultOp {
  open,      // xOpen of any file (the database, its WAL, a journal)
  read,      // xRead
  write,     // xWrite
  truncate,  // xTruncate
  sync,      // xSync
  lock,      // xLock (a file lock: SHARED, RESERVED, EXCLUSIVE, ...)
  shm_map,   // xShmMap (mapping the WAL index)
  shm_lock,  // xShmLock (the WAL index's locks: readers, the writer, checkpoints)
  // xShmLock taking the WAL's write lock (exclusive, slot 0): what BEGIN IMMEDIATE waits for.
  // Such a call is checked as shm_write_lock first, then (when not failed) as shm_lock.
  shm_write_lock,
};
inline constexpr int kFaultOpCount = 9;

// Which files a fault applies to (shm_map and shm_lock are calls on the database file).
enum class FaultFile { any, main_db, wal, journal };

// SQLite's result codes (sqlite3.h), for tests that do not include it.
namespace fault_codes {
inline constexpr int kBusy = 5;                       // SQLITE_BUSY
inline constexpr int kIoErr = 10;                     // SQLITE_IOERR
inline constexpr int kFull = 13;                      // SQLITE_FULL
inline constexpr int kIoErrRead = 10 | (1 << 8);      // SQLITE_IOERR_READ
inline constexpr int kIoErrWrite = 10 | (3 << 8);     // SQLITE_IOERR_WRITE
inline constexpr int kIoErrFsync = 10 | (4 << 8);     // SQLITE_IOERR_FSYNC
inline constexpr int kIoErrLock = 10 | (15 << 8);     // SQLITE_IOERR_LOCK
inline constexpr int kIoErrShmLock = 10 | (20 << 8);  // SQLITE_IOERR_SHMLOCK
inline constexpr int kIoErrShmMap = 10 | (21 << 8);   // SQLITE_IOERR_SHMMAP
inline constexpr int kCantOpen = 14;                  // SQLITE_CANTOPEN
}  // namespace fault_codes

// One op of a fault that covers several, and the code its calls fail with.
struct FaultOpCode {
  FaultOp op;
  int code;
};

class FaultInjection {
 public:
  // `fail(..., times = kForever)` keeps failing until clear().
  static constexpr int kForever = 0;

  // Registers the shim as the default VFS. Throws std::runtime_error when SQLite refuses.
  FaultInjection();
  // Clears every fault and restores the previous default VFS.
  ~FaultInjection();
  FaultInjection(const FaultInjection&) = delete;
  FaultInjection& operator=(const FaultInjection&) = delete;

  // Arms a fault: the `nth` (1-based) call of `op` on a `file` from now on fails with `code`,
  // and so do the next `times - 1` such calls (every one of them for kForever). Several faults
  // may be armed at once; each counts its own calls. When `path_contains` is not empty, only
  // files whose path contains it count (to fault one store of several).
  void fail(FaultOp op, int nth, int code, int times = 1, FaultFile file = FaultFile::any,
            const std::string& path_contains = {});
  // Arms one fault over several ops, whose calls are counted as one sequence: the `nth` call
  // of any of them from now on fails, with its op's code, and so do the next `times - 1`
  // (every one for kForever). Arming it is atomic: no call sees it half armed. An xShmLock
  // taking the write lock is checked as shm_write_lock, then as shm_lock: list one of the two.
  void fail_any_of(std::initializer_list<FaultOpCode> ops, int nth, int times = 1,
                   FaultFile file = FaultFile::any, const std::string& path_contains = {});
  // A storage hiccup as SQLite sees it (every read and write fails): from the `nth` lock call
  // on, `times` lock calls fail. Lock calls are file locks (xLock, failing with
  // SQLITE_IOERR_LOCK) and the WAL index's locks (xShmLock taking a lock, failing with
  // SQLITE_IOERR_SHMLOCK), on every file, counted as one sequence: fail_any_of() of the two.
  void fail_locks(int nth, int times = 1);
  // Every xSync from now on (on every file) takes `latency` longer: the shim sleeps after the
  // real sync returns. A disk whose flushes cost what a cloud volume's do (factum_bench
  // --sync-latency-us); zero turns it off. Not cleared by clear(). Throws std::invalid_argument
  // for a negative latency.
  void delay_syncs(std::chrono::microseconds latency);
  // Disarms every fault (counters are kept).
  void clear();

  // Calls of `op` seen since construction or reset_counts(), faulted or not, on every file.
  std::uint64_t calls(FaultOp op) const;
  // Faults injected since construction or reset_counts().
  std::uint64_t injected() const;
  // True when every armed fault has fired all its times (kForever ones never are).
  bool spent() const;
  void reset_counts();
};

}  // namespace factum::test
