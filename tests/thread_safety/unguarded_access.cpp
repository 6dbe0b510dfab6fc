// Must NOT compile under clang -Wthread-safety -Werror (.ci/run, step "thread-safety"): it
// touches a guarded member without its lock, the mistake the annotations exist to catch. If
// it compiles, the analysis is off and the libraries' annotations prove nothing.
#include "factum/detail/mutex.hpp"

namespace {

class Counter {
 public:
  void bump() { ++count_; }  // no MutexLock: refused
  int read() {
    factum::detail::MutexLock lock(mu_);
    return count_;
  }

 private:
  factum::detail::Mutex mu_;
  int count_ FACTUM_GUARDED_BY(mu_) = 0;
};

}  // namespace

int main() {
  Counter c;
  c.bump();
  return c.read();
}
