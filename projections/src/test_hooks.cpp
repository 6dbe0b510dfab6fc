#include "test_hooks.hpp"

#include <atomic>
#include <memory>

#include "factum/detail/mutex.hpp"

namespace factum::detail {
namespace {

using Hook = std::function<void(const std::string&)>;

struct Hooks {
  std::atomic<bool> any{false};
  Mutex mu;
  std::shared_ptr<const Hook> after_batch_read FACTUM_GUARDED_BY(mu);
};

Hooks& hooks() {
  static Hooks h;
  return h;
}

}  // namespace

void set_after_batch_read(Hook hook) {
  Hooks& h = hooks();
  MutexLock lock(h.mu);
  h.any = static_cast<bool>(hook);
  h.after_batch_read = hook ? std::make_shared<const Hook>(std::move(hook)) : nullptr;
}

void after_batch_read(const std::string& projection) {
  Hooks& h = hooks();
  if (!h.any.load(std::memory_order_acquire)) return;
  std::shared_ptr<const Hook> hook;
  {
    MutexLock lock(h.mu);
    hook = h.after_batch_read;
  }
  if (hook) (*hook)(projection);  // outside the lock: the hook may take its time
}

}  // namespace factum::detail
