#include "storage_faults.hpp"

#include <sqlite3.h>

#include <atomic>
#include <stdexcept>

namespace factum::test {
namespace {

std::atomic<bool> g_fail_all{false};
std::atomic<std::uint64_t> g_skip{0};
std::atomic<std::uint64_t> g_count{0};
std::atomic<std::uint64_t> g_failures{0};

sqlite3_vfs* g_base = nullptr;
sqlite3_vfs g_vfs;

// Decides whether this lock call fails.
bool fail_now() {
  if (g_fail_all) {
    ++g_failures;
    return true;
  }
  if (g_count.load() == 0) return false;
  std::uint64_t skip = g_skip.load();
  while (skip > 0) {
    if (g_skip.compare_exchange_weak(skip, skip - 1)) return false;
  }
  std::uint64_t count = g_count.load();
  while (count > 0) {
    if (g_count.compare_exchange_weak(count, count - 1)) {
      ++g_failures;
      return true;
    }
  }
  return false;
}

// Our file: the base VFS's file follows it in the same allocation.
struct File {
  sqlite3_file base;
  sqlite3_file* inner() { return reinterpret_cast<sqlite3_file*>(this + 1); }
};

sqlite3_file* inner(sqlite3_file* f) { return reinterpret_cast<File*>(f)->inner(); }

int x_close(sqlite3_file* f) { return inner(f)->pMethods->xClose(inner(f)); }
int x_read(sqlite3_file* f, void* b, int n, sqlite3_int64 o) {
  return inner(f)->pMethods->xRead(inner(f), b, n, o);
}
int x_write(sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
  return inner(f)->pMethods->xWrite(inner(f), b, n, o);
}
int x_truncate(sqlite3_file* f, sqlite3_int64 s) {
  return inner(f)->pMethods->xTruncate(inner(f), s);
}
int x_sync(sqlite3_file* f, int flags) { return inner(f)->pMethods->xSync(inner(f), flags); }
int x_file_size(sqlite3_file* f, sqlite3_int64* s) {
  return inner(f)->pMethods->xFileSize(inner(f), s);
}
int x_lock(sqlite3_file* f, int l) {
  if (fail_now()) return SQLITE_IOERR_LOCK;
  return inner(f)->pMethods->xLock(inner(f), l);
}
int x_unlock(sqlite3_file* f, int l) { return inner(f)->pMethods->xUnlock(inner(f), l); }
int x_check_reserved(sqlite3_file* f, int* r) {
  return inner(f)->pMethods->xCheckReservedLock(inner(f), r);
}
int x_file_control(sqlite3_file* f, int op, void* arg) {
  return inner(f)->pMethods->xFileControl(inner(f), op, arg);
}
int x_sector_size(sqlite3_file* f) { return inner(f)->pMethods->xSectorSize(inner(f)); }
int x_device(sqlite3_file* f) { return inner(f)->pMethods->xDeviceCharacteristics(inner(f)); }
int x_shm_map(sqlite3_file* f, int pg, int sz, int extend, void volatile** p) {
  return inner(f)->pMethods->xShmMap(inner(f), pg, sz, extend, p);
}
int x_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
  // Unlocks always go through: a failed unlock would leave the lock table inconsistent.
  if ((flags & SQLITE_SHM_LOCK) != 0 && fail_now()) return SQLITE_IOERR_SHMLOCK;
  return inner(f)->pMethods->xShmLock(inner(f), offset, n, flags);
}
void x_shm_barrier(sqlite3_file* f) { inner(f)->pMethods->xShmBarrier(inner(f)); }
int x_shm_unmap(sqlite3_file* f, int del) { return inner(f)->pMethods->xShmUnmap(inner(f), del); }
int x_fetch(sqlite3_file* f, sqlite3_int64 o, int n, void** p) {
  return inner(f)->pMethods->xFetch(inner(f), o, n, p);
}
int x_unfetch(sqlite3_file* f, sqlite3_int64 o, void* p) {
  return inner(f)->pMethods->xUnfetch(inner(f), o, p);
}

const sqlite3_io_methods kMethods = {
    3,           x_close,   x_read,     x_write,          x_truncate,     x_sync,
    x_file_size, x_lock,    x_unlock,   x_check_reserved, x_file_control, x_sector_size,
    x_device,    x_shm_map, x_shm_lock, x_shm_barrier,    x_shm_unmap,    x_fetch,
    x_unfetch,
};

int x_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  File* file = reinterpret_cast<File*>(f);
  file->base.pMethods = nullptr;
  const int rc = g_base->xOpen(g_base, name, file->inner(), flags, out_flags);
  if (rc == SQLITE_OK && file->inner()->pMethods != nullptr) file->base.pMethods = &kMethods;
  return rc;
}

}  // namespace

StorageFaults::StorageFaults() {
  g_base = sqlite3_vfs_find(nullptr);
  if (g_base == nullptr) throw std::runtime_error("StorageFaults: no default VFS");
  g_vfs = *g_base;
  g_vfs.iVersion = g_base->iVersion;
  g_vfs.szOsFile = static_cast<int>(sizeof(File)) + g_base->szOsFile;
  g_vfs.zName = "factum_storage_faults";
  g_vfs.pNext = nullptr;
  g_vfs.xOpen = x_open;
  g_fail_all = false;
  g_skip = 0;
  g_count = 0;
  g_failures = 0;
  if (sqlite3_vfs_register(&g_vfs, 1) != SQLITE_OK) {
    throw std::runtime_error("StorageFaults: cannot register the VFS");
  }
}

StorageFaults::~StorageFaults() {
  g_fail_all = false;
  g_count = 0;
  sqlite3_vfs_unregister(&g_vfs);
  sqlite3_vfs_register(g_base, 1);
}

void StorageFaults::fail_all(bool on) { g_fail_all = on; }

void StorageFaults::fail_calls(std::uint64_t skip, std::uint64_t count) {
  g_count = 0;
  g_skip = skip;
  g_count = count;
}

std::uint64_t StorageFaults::remaining() const { return g_count; }

std::uint64_t StorageFaults::failures() const { return g_failures; }

}  // namespace factum::test
