// A mutex, its scoped lock and a condition variable that clang's thread-safety analysis
// understands (LevelDB's port::Mutex with GUARDED_BY and friends, in the same spirit): members
// marked FACTUM_GUARDED_BY(mu_) may be touched only with mu_ held, and functions marked
// FACTUM_REQUIRES / FACTUM_EXCLUDES say what their callers must (not) hold. Built with clang and
// -Wthread-safety (.ci/run's thread-safety step), a violation is a compile error; with other
// compilers the annotations compile to nothing.
//
// Internal to factum's libraries (not installed). Thread-safety: as std::mutex.
#pragma once

#include <semaphore.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define FACTUM_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define FACTUM_THREAD_ANNOTATION(x)
#endif

#define FACTUM_CAPABILITY(x) FACTUM_THREAD_ANNOTATION(capability(x))
#define FACTUM_SCOPED_CAPABILITY FACTUM_THREAD_ANNOTATION(scoped_lockable)
#define FACTUM_GUARDED_BY(x) FACTUM_THREAD_ANNOTATION(guarded_by(x))
#define FACTUM_PT_GUARDED_BY(x) FACTUM_THREAD_ANNOTATION(pt_guarded_by(x))
#define FACTUM_REQUIRES(...) FACTUM_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define FACTUM_EXCLUDES(...) FACTUM_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define FACTUM_ACQUIRE(...) FACTUM_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define FACTUM_RELEASE(...) FACTUM_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define FACTUM_NO_THREAD_SAFETY_ANALYSIS FACTUM_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace factum::detail {

class CondVar;
class MutexLock;

class FACTUM_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void lock() FACTUM_ACQUIRE() { mu_.lock(); }
  void unlock() FACTUM_RELEASE() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction (or unlock()).
class FACTUM_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) FACTUM_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() FACTUM_RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  void unlock() FACTUM_RELEASE() { lock_.unlock(); }
  void lock() FACTUM_ACQUIRE() { lock_.lock(); }

 private:
  friend class CondVar;
  std::unique_lock<std::mutex> lock_;
};

// Waits release the lock and take it back before returning. Wait in a loop that tests the
// guarded condition (predicate lambdas escape the analysis).
class CondVar {
 public:
  void wait(MutexLock& lock) { cv_.wait(lock.lock_); }
  // Returns false when `d` passed first.
  template <typename Rep, typename Period>
  bool wait_for(MutexLock& lock, std::chrono::duration<Rep, Period> d) {
    return cv_.wait_for(lock.lock_, d) == std::cv_status::no_timeout;
  }
  // Returns false when `deadline` passed first.
  template <typename Clock, typename Duration>
  bool wait_until(MutexLock& lock, std::chrono::time_point<Clock, Duration> deadline) {
    return cv_.wait_until(lock.lock_, deadline) == std::cv_status::no_timeout;
  }
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

// A one-shot wake-up (a POSIX semaphore, starting at 0): wait() returns once post() was called,
// and what the poster wrote before post() is visible to the waiter after wait(). Unlike a
// condition variable it needs no mutex, so a woken thread does not run into a lock the waker
// still holds. Its owner may destroy it as soon as wait() returned: POSIX allows destroying a
// semaphore no thread is blocked on, and glibc's sem_post touches the semaphore's memory no
// more once its increment has let the waiter go (at most a futex wake on its address follows,
// which may wake a later user of that address spuriously: futex users retry).
class Signal {
 public:
  Signal() noexcept { ::sem_init(&sem_, 0, 0); }
  ~Signal() { ::sem_destroy(&sem_); }
  Signal(const Signal&) = delete;
  Signal& operator=(const Signal&) = delete;
  void wait() noexcept {
    while (::sem_wait(&sem_) != 0 && errno == EINTR) {
    }
  }
  void post() noexcept { ::sem_post(&sem_); }

 private:
  sem_t sem_;
};

}  // namespace factum::detail
