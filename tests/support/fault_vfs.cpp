// The fault-injecting VFS: a shim over the default VFS whose files carry a shim io_methods.
//
// Layout: a FaultyFile starts with the sqlite3_file SQLite sees, followed by the real VFS's
// file (szOsFile is the sum of both). Each call counts, asks the armed faults whether it must
// fail, and otherwise forwards to the real file. The shim's state is process-wide and static,
// so files opened through it stay valid after the FaultInjection that registered it is gone.
#include "support/fault_vfs.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace factum::test {
namespace {

static_assert(fault_codes::kBusy == SQLITE_BUSY);
static_assert(fault_codes::kIoErr == SQLITE_IOERR);
static_assert(fault_codes::kFull == SQLITE_FULL);
static_assert(fault_codes::kIoErrRead == SQLITE_IOERR_READ);
static_assert(fault_codes::kIoErrWrite == SQLITE_IOERR_WRITE);
static_assert(fault_codes::kIoErrFsync == SQLITE_IOERR_FSYNC);
static_assert(fault_codes::kIoErrLock == SQLITE_IOERR_LOCK);
static_assert(fault_codes::kIoErrShmLock == SQLITE_IOERR_SHMLOCK);
static_assert(fault_codes::kIoErrShmMap == SQLITE_IOERR_SHMMAP);
static_assert(fault_codes::kCantOpen == SQLITE_CANTOPEN);

struct Fault {
  std::array<std::optional<int>, kFaultOpCount> code;  // per op: the code, if the fault covers it
  FaultFile file;
  std::string path_contains;
  int skip;   // matching calls still to let through
  int times;  // failures still to inject (< 0: forever)
};

// What every shim file and the shim VFS share.
struct State {
  std::mutex mu;
  std::vector<Fault> faults;
  std::array<std::uint64_t, kFaultOpCount> calls{};
  std::uint64_t injected = 0;
  bool active = false;                         // a FaultInjection lives
  std::atomic<std::int64_t> sync_delay_us{0};  // delay_syncs; read without the mutex
  sqlite3_vfs* real = nullptr;
  sqlite3_vfs vfs{};

  // Counts a call of `op` on a file of `kind` at `path`; the code to fail it with, if any.
  std::optional<int> check(FaultOp op, FaultFile kind, const std::string& path) {
    std::lock_guard lock(mu);
    ++calls[static_cast<std::size_t>(op)];
    for (Fault& f : faults) {
      const std::optional<int>& code = f.code[static_cast<std::size_t>(op)];
      if (!code || f.times == 0) continue;
      if (f.file != FaultFile::any && f.file != kind) continue;
      if (!f.path_contains.empty() && path.find(f.path_contains) == std::string::npos) continue;
      if (f.skip > 0) {
        --f.skip;
        continue;
      }
      if (f.times > 0) --f.times;
      ++injected;
      return *code;
    }
    return std::nullopt;
  }
};

State& state() {
  static State s;
  return s;
}

struct FaultyFile {
  sqlite3_file base;  // must be first: SQLite sees this
  sqlite3_file* real;
  FaultFile kind;
  std::string* path;  // owned; deleted in close (a sqlite3_file has no destructor)
};

FaultyFile& shim(sqlite3_file* f) { return *reinterpret_cast<FaultyFile*>(f); }
sqlite3_file* real(sqlite3_file* f) { return shim(f).real; }
const sqlite3_io_methods& methods(sqlite3_file* f) { return *real(f)->pMethods; }

std::optional<int> check(sqlite3_file* f, FaultOp op) {
  return state().check(op, shim(f).kind, *shim(f).path);
}

int file_close(sqlite3_file* f) {
  const int rc = methods(f).xClose(real(f));
  std::unique_ptr<std::string> path(shim(f).path);
  shim(f).path = nullptr;
  return rc;
}

int file_read(sqlite3_file* f, void* buffer, int amount, sqlite3_int64 offset) {
  if (auto code = check(f, FaultOp::read)) return *code;
  return methods(f).xRead(real(f), buffer, amount, offset);
}

int file_write(sqlite3_file* f, const void* buffer, int amount, sqlite3_int64 offset) {
  if (auto code = check(f, FaultOp::write)) return *code;
  return methods(f).xWrite(real(f), buffer, amount, offset);
}

int file_truncate(sqlite3_file* f, sqlite3_int64 size) {
  if (auto code = check(f, FaultOp::truncate)) return *code;
  return methods(f).xTruncate(real(f), size);
}

int file_sync(sqlite3_file* f, int flags) {
  if (auto code = check(f, FaultOp::sync)) return *code;
  const int rc = methods(f).xSync(real(f), flags);
  const std::int64_t delay = state().sync_delay_us.load(std::memory_order_relaxed);
  if (delay > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay));
  return rc;
}

int file_size(sqlite3_file* f, sqlite3_int64* size) { return methods(f).xFileSize(real(f), size); }

int file_lock(sqlite3_file* f, int level) {
  if (auto code = check(f, FaultOp::lock)) return *code;
  return methods(f).xLock(real(f), level);
}

int file_unlock(sqlite3_file* f, int level) { return methods(f).xUnlock(real(f), level); }

int file_check_reserved(sqlite3_file* f, int* out) {
  return methods(f).xCheckReservedLock(real(f), out);
}

int file_control(sqlite3_file* f, int op, void* arg) {
  return methods(f).xFileControl(real(f), op, arg);
}

int file_sector_size(sqlite3_file* f) { return methods(f).xSectorSize(real(f)); }

int file_device_characteristics(sqlite3_file* f) {
  return methods(f).xDeviceCharacteristics(real(f));
}

int file_shm_map(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  if (auto code = check(f, FaultOp::shm_map)) return *code;
  return methods(f).xShmMap(real(f), region, size, extend, out);
}

int file_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
  // An unlock never fails: SQLite does not expect it to, and a real file's never does.
  if ((flags & SQLITE_SHM_LOCK) != 0) {
    const bool write_lock = (flags & SQLITE_SHM_EXCLUSIVE) != 0 && offset == 0;
    if (write_lock) {
      if (auto code = check(f, FaultOp::shm_write_lock)) return *code;
    }
    if (auto code = check(f, FaultOp::shm_lock)) return *code;
  }
  return methods(f).xShmLock(real(f), offset, n, flags);
}

void file_shm_barrier(sqlite3_file* f) { methods(f).xShmBarrier(real(f)); }

int file_shm_unmap(sqlite3_file* f, int delete_flag) {
  return methods(f).xShmUnmap(real(f), delete_flag);
}

int file_fetch(sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
  return methods(f).xFetch(real(f), offset, amount, out);
}

int file_unfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
  return methods(f).xUnfetch(real(f), offset, p);
}

// The shim's io_methods for a real file of io_methods version `version` (1 to 3): the same
// version, so SQLite uses exactly the calls the real file has.
const sqlite3_io_methods* io_methods(int version) {
  static const auto make = [](int v) {
    sqlite3_io_methods m{};
    m.iVersion = v;
    m.xClose = file_close;
    m.xRead = file_read;
    m.xWrite = file_write;
    m.xTruncate = file_truncate;
    m.xSync = file_sync;
    m.xFileSize = file_size;
    m.xLock = file_lock;
    m.xUnlock = file_unlock;
    m.xCheckReservedLock = file_check_reserved;
    m.xFileControl = file_control;
    m.xSectorSize = file_sector_size;
    m.xDeviceCharacteristics = file_device_characteristics;
    if (v >= 2) {
      m.xShmMap = file_shm_map;
      m.xShmLock = file_shm_lock;
      m.xShmBarrier = file_shm_barrier;
      m.xShmUnmap = file_shm_unmap;
    }
    if (v >= 3) {
      m.xFetch = file_fetch;
      m.xUnfetch = file_unfetch;
    }
    return m;
  };
  static const std::array<sqlite3_io_methods, 3> all{make(1), make(2), make(3)};
  return &all[static_cast<std::size_t>(std::clamp(version, 1, 3) - 1)];
}

FaultFile kind_of(int flags) {
  if ((flags & SQLITE_OPEN_MAIN_DB) != 0) return FaultFile::main_db;
  if ((flags & SQLITE_OPEN_WAL) != 0) return FaultFile::wal;
  if ((flags & SQLITE_OPEN_MAIN_JOURNAL) != 0) return FaultFile::journal;
  return FaultFile::any;  // temp files and the like: only "any" faults reach them
}

int vfs_open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* file, int flags,
             int* out_flags) {
  State& s = state();
  FaultyFile& f = shim(file);
  f.base.pMethods = nullptr;
  f.real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<std::byte*>(file) + sizeof(FaultyFile));
  f.kind = kind_of(flags);
  f.path = new std::string(name != nullptr ? name : "");  // freed by file_close
  int rc = SQLITE_OK;
  if (auto code = s.check(FaultOp::open, f.kind, *f.path)) {
    rc = *code;
  } else {
    rc = s.real->xOpen(s.real, name, f.real, flags, out_flags);
  }
  (void)vfs;
  if (f.real->pMethods != nullptr) {
    // SQLite calls xClose even after a failed open when pMethods is set.
    f.base.pMethods = io_methods(f.real->pMethods->iVersion);
  } else {
    delete f.path;
    f.path = nullptr;
  }
  return rc;
}

sqlite3_vfs* real_vfs() { return state().real; }

int vfs_delete(sqlite3_vfs*, const char* name, int sync_dir) {
  return real_vfs()->xDelete(real_vfs(), name, sync_dir);
}
int vfs_access(sqlite3_vfs*, const char* name, int flags, int* out) {
  return real_vfs()->xAccess(real_vfs(), name, flags, out);
}
int vfs_full_pathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return real_vfs()->xFullPathname(real_vfs(), name, n, out);
}
void* vfs_dl_open(sqlite3_vfs*, const char* name) { return real_vfs()->xDlOpen(real_vfs(), name); }
void vfs_dl_error(sqlite3_vfs*, int n, char* out) { real_vfs()->xDlError(real_vfs(), n, out); }
void (*vfs_dl_sym(sqlite3_vfs*, void* handle, const char* symbol))(void) {
  return real_vfs()->xDlSym(real_vfs(), handle, symbol);
}
void vfs_dl_close(sqlite3_vfs*, void* handle) { real_vfs()->xDlClose(real_vfs(), handle); }
int vfs_randomness(sqlite3_vfs*, int n, char* out) {
  return real_vfs()->xRandomness(real_vfs(), n, out);
}
int vfs_sleep(sqlite3_vfs*, int us) { return real_vfs()->xSleep(real_vfs(), us); }
int vfs_current_time(sqlite3_vfs*, double* out) {
  return real_vfs()->xCurrentTime(real_vfs(), out);
}
int vfs_last_error(sqlite3_vfs*, int n, char* out) {
  return real_vfs()->xGetLastError(real_vfs(), n, out);
}
int vfs_current_time64(sqlite3_vfs*, sqlite3_int64* out) {
  return real_vfs()->xCurrentTimeInt64(real_vfs(), out);
}
int vfs_set_syscall(sqlite3_vfs*, const char* name, sqlite3_syscall_ptr p) {
  return real_vfs()->xSetSystemCall(real_vfs(), name, p);
}
sqlite3_syscall_ptr vfs_get_syscall(sqlite3_vfs*, const char* name) {
  return real_vfs()->xGetSystemCall(real_vfs(), name);
}
const char* vfs_next_syscall(sqlite3_vfs*, const char* name) {
  return real_vfs()->xNextSystemCall(real_vfs(), name);
}

// Builds the shim VFS over `real` (once per process: the real default does not change).
void build_vfs(State& s, sqlite3_vfs* real_default) {
  s.real = real_default;
  sqlite3_vfs& v = s.vfs;
  v.iVersion = std::min(real_default->iVersion, 3);
  v.szOsFile = static_cast<int>(sizeof(FaultyFile)) + real_default->szOsFile;
  v.mxPathname = real_default->mxPathname;
  v.zName = "factum-fault";
  v.xOpen = vfs_open;
  v.xDelete = vfs_delete;
  v.xAccess = vfs_access;
  v.xFullPathname = vfs_full_pathname;
  v.xDlOpen = real_default->xDlOpen != nullptr ? vfs_dl_open : nullptr;
  v.xDlError = real_default->xDlError != nullptr ? vfs_dl_error : nullptr;
  v.xDlSym = real_default->xDlSym != nullptr ? vfs_dl_sym : nullptr;
  v.xDlClose = real_default->xDlClose != nullptr ? vfs_dl_close : nullptr;
  v.xRandomness = vfs_randomness;
  v.xSleep = vfs_sleep;
  v.xCurrentTime = vfs_current_time;
  v.xGetLastError = vfs_last_error;
  if (v.iVersion >= 2) v.xCurrentTimeInt64 = vfs_current_time64;
  if (v.iVersion >= 3) {
    v.xSetSystemCall = vfs_set_syscall;
    v.xGetSystemCall = vfs_get_syscall;
    v.xNextSystemCall = vfs_next_syscall;
  }
}

}  // namespace

FaultInjection::FaultInjection() {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.active) throw std::runtime_error("fault_vfs: one FaultInjection at a time");
  if (sqlite3_initialize() != SQLITE_OK) throw std::runtime_error("fault_vfs: sqlite3_initialize");
  if (s.real == nullptr) {
    sqlite3_vfs* real_default = sqlite3_vfs_find(nullptr);
    if (real_default == nullptr) throw std::runtime_error("fault_vfs: no default VFS");
    build_vfs(s, real_default);
  }
  if (sqlite3_vfs_register(&s.vfs, /*makeDflt=*/1) != SQLITE_OK)
    throw std::runtime_error("fault_vfs: sqlite3_vfs_register failed");
  s.faults.clear();
  s.calls = {};
  s.injected = 0;
  s.active = true;
}

FaultInjection::~FaultInjection() {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.faults.clear();
  s.sync_delay_us = 0;
  s.active = false;
  sqlite3_vfs_unregister(&s.vfs);
  sqlite3_vfs_register(s.real, /*makeDflt=*/1);
}

void FaultInjection::fail(FaultOp op, int nth, int code, int times, FaultFile file,
                          const std::string& path_contains) {
  fail_any_of({{op, code}}, nth, times, file, path_contains);
}

void FaultInjection::fail_any_of(std::initializer_list<FaultOpCode> ops, int nth, int times,
                                 FaultFile file, const std::string& path_contains) {
  if (nth < 1) throw std::invalid_argument("fault_vfs: nth counts from 1");
  if (times < 0) throw std::invalid_argument("fault_vfs: times is kForever or positive");
  if (ops.size() == 0) throw std::invalid_argument("fault_vfs: a fault covers at least one op");
  Fault fault{{}, file, path_contains, nth - 1, times == kForever ? -1 : times};
  for (const FaultOpCode& oc : ops) {
    const auto i = static_cast<std::size_t>(oc.op);
    if (i >= fault.code.size()) throw std::invalid_argument("fault_vfs: unknown op");
    fault.code[i] = oc.code;
  }
  State& s = state();
  std::lock_guard lock(s.mu);
  s.faults.push_back(std::move(fault));
}

void FaultInjection::fail_locks(int nth, int times) {
  fail_any_of({{FaultOp::lock, SQLITE_IOERR_LOCK}, {FaultOp::shm_lock, SQLITE_IOERR_SHMLOCK}}, nth,
              times);
}

void FaultInjection::delay_syncs(std::chrono::microseconds latency) {
  if (latency.count() < 0) throw std::invalid_argument("fault_vfs: a negative sync latency");
  state().sync_delay_us = latency.count();
}

void FaultInjection::clear() {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.faults.clear();
}

std::uint64_t FaultInjection::calls(FaultOp op) const {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.calls[static_cast<std::size_t>(op)];
}

std::uint64_t FaultInjection::injected() const {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.injected;
}

bool FaultInjection::spent() const {
  State& s = state();
  std::lock_guard lock(s.mu);
  for (const Fault& f : s.faults) {
    if (f.times != 0) return false;
  }
  return true;
}

void FaultInjection::reset_counts() {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.calls = {};
  s.injected = 0;
}

}  // namespace factum::test
