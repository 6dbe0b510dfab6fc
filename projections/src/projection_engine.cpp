#include "factum/projections/projection_engine.hpp"

#include <boost/signals2/connection.hpp>
#include <map>
#include <mutex>
#include <thread>

#include "factum/eventstore/errors.hpp"
#include "factum/projections/checkpoint_store.hpp"
#include "projection_meta.hpp"
#include "runner.hpp"

namespace factum {

using detail::ProjectionRunner;

struct ProjectionEngine::Impl {
  mutable detail::Mutex mu;
  std::map<std::string, std::shared_ptr<ProjectionRunner>, std::less<>> runners
      FACTUM_GUARDED_BY(mu);
  boost::signals2::scoped_connection hook;

  std::vector<std::shared_ptr<ProjectionRunner>> all() const {
    detail::MutexLock lock(mu);
    std::vector<std::shared_ptr<ProjectionRunner>> out;
    for (const auto& [name, runner] : runners) out.push_back(runner);
    return out;
  }

  ProjectionRunner& find(std::string_view name) const {
    detail::MutexLock lock(mu);
    const auto it = runners.find(name);
    if (it == runners.end()) {
      throw NotFound("factum: no projection named '" + std::string(name) + "' in this engine");
    }
    return *it->second;
  }
};

ProjectionEngine::ProjectionEngine(EventStore& store, EngineOptions options)
    : store_(store), options_(std::move(options)), impl_(std::make_shared<Impl>()) {
  // Nothing is written here: each projection's setup makes the engine's tables in its own
  // transaction (ProjectionRunner::setup), so an engine that adds none leaves the file as it was.
  // Inline projections run inside every append of this process. The slot holds the runners
  // it calls (the engine's lock is taken briefly, never while waiting for the writer).
  impl_->hook = store_.on_appending().connect([impl = impl_](AppendTransaction& tx) {
    std::vector<std::shared_ptr<ProjectionRunner>> inline_runners;
    {
      detail::MutexLock lock(impl->mu);
      for (const auto& [name, runner] : impl->runners) inline_runners.push_back(runner);
    }
    for (const auto& runner : inline_runners) runner->on_append(tx);
  });
}

ProjectionEngine::~ProjectionEngine() {
  impl_->hook.disconnect();
  stop();
}

void ProjectionEngine::add(std::shared_ptr<Projection> projection, ProjectionOptions options) {
  if (!projection) throw InvalidArgument("factum: ProjectionEngine::add was given no projection");
  auto runner =
      std::make_shared<ProjectionRunner>(store_, std::move(projection), options, options_);
  {
    detail::MutexLock lock(impl_->mu);
    if (impl_->runners.count(runner->name()) != 0) {
      throw InvalidArgument("factum: projection '" + runner->name() + "' was added already");
    }
  }
  runner->start();
  detail::MutexLock lock(impl_->mu);
  if (!impl_->runners.emplace(runner->name(), runner).second) {
    throw InvalidArgument("factum: projection '" + runner->name() + "' was added already");
  }
}

void ProjectionEngine::rebuild(std::string_view name) { impl_->find(name).request_rebuild(); }

void ProjectionEngine::restart(std::string_view name) { impl_->find(name).restart(); }

void ProjectionEngine::stop() noexcept {
  for (const auto& runner : impl_->all()) runner->stop();
}

std::vector<ProjectionStatus> ProjectionEngine::status() const {
  const Position head = store_.head_position();
  std::vector<ProjectionStatus> out;
  for (const auto& runner : impl_->all()) out.push_back(runner->status(head));
  return out;
}

ProjectionStatus ProjectionEngine::status(std::string_view name) const {
  return impl_->find(name).status(store_.head_position());
}

bool ProjectionEngine::wait_for(std::string_view name, Position p,
                                std::chrono::milliseconds timeout) const {
  // The file decides; the runner's committed transactions say when to look (each read of the
  // file is a read transaction), and a look every 50 ms sees other engines' progress.
  constexpr auto kLook = std::chrono::milliseconds(50);
  const ProjectionRunner& runner = impl_->find(name);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool hinted = false;
  for (;;) {
    if (runner.serving_current() && runner.checkpoint() >= p) return true;
    const auto now = std::chrono::steady_clock::now();
    if (runner.halted() || now >= deadline) return false;
    // Memory said reached and the file does not (another engine reset the target): poll.
    if (hinted) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    hinted = runner.wait_committed(p, std::min(deadline, now + kLook));
  }
}

bool ProjectionEngine::wait_idle(std::chrono::milliseconds timeout) const {
  const Position head = store_.head_position();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& runner : impl_->all()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!wait_for(runner->name(), head, std::max(left, std::chrono::milliseconds(0)))) {
      return false;
    }
  }
  return true;
}

std::vector<ProjectionStatus> ProjectionEngine::recorded(const EventStore& store) {
  const Position head = store.head_position();
  std::vector<ProjectionStatus> out;
  store.read_sql([&](Sql& sql) {
    for (const detail::ProjectionRow& row : detail::load_rows(sql)) {
      ProjectionStatus s;
      s.name = row.name;
      s.version = row.version;
      s.generation = row.generation;
      s.mode = row.mode;
      s.state = row.state;
      s.checkpoint = CheckpointStore::load(sql, row.name);
      if (row.rebuild_version != 0) {
        s.rebuild_checkpoint =
            CheckpointStore::load(sql, detail::rebuild_checkpoint_name(row.name));
      }
      s.head = head;
      s.lag = head - std::min(head, s.checkpoint);
      s.skipped = row.skipped;
      s.error = row.error;
      out.push_back(std::move(s));
    }
  });
  return out;
}

}  // namespace factum
