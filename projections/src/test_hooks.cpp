#include "test_hooks.hpp"

#include <array>
#include <atomic>
#include <memory>

#include "factum/detail/mutex.hpp"

namespace factum::detail {
namespace {

using Hook = std::function<void(const std::string&)>;

enum Point : std::size_t { kAfterBatchRead, kAfterBatchCommit, kPoints };

struct Hooks {
  std::atomic<int> set{0};  // how many points have a hook
  Mutex mu;
  std::array<std::shared_ptr<const Hook>, kPoints> at FACTUM_GUARDED_BY(mu);
};

Hooks& hooks() {
  static Hooks h;
  return h;
}

void set_hook(Point point, Hook hook) {
  Hooks& h = hooks();
  MutexLock lock(h.mu);
  if (h.at[point]) --h.set;
  h.at[point] = hook ? std::make_shared<const Hook>(std::move(hook)) : nullptr;
  if (h.at[point]) ++h.set;
}

void run_hook(Point point, const std::string& projection) {
  Hooks& h = hooks();
  if (h.set.load(std::memory_order_acquire) == 0) return;
  std::shared_ptr<const Hook> hook;
  {
    MutexLock lock(h.mu);
    hook = h.at[point];
  }
  if (hook) (*hook)(projection);  // outside the lock: the hook may take its time
}

}  // namespace

void set_after_batch_read(Hook hook) { set_hook(kAfterBatchRead, std::move(hook)); }
void after_batch_read(const std::string& projection) { run_hook(kAfterBatchRead, projection); }
void set_after_batch_commit(Hook hook) { set_hook(kAfterBatchCommit, std::move(hook)); }
void after_batch_commit(const std::string& projection) { run_hook(kAfterBatchCommit, projection); }

}  // namespace factum::detail
