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

struct ProjectionEngine::Impl {
  mutable std::mutex mu;
  std::map<std::string, std::shared_ptr<Runner>, std::less<>> runners;
  boost::signals2::scoped_connection hook;
  boost::signals2::scoped_connection committed;

  std::vector<std::shared_ptr<Runner>> all() const {
    std::lock_guard lock(mu);
    std::vector<std::shared_ptr<Runner>> out;
    for (const auto& [name, runner] : runners) out.push_back(runner);
    return out;
  }
};

ProjectionEngine::ProjectionEngine(EventStore& store, EngineOptions options)
    : store_(store), options_(std::move(options)), impl_(std::make_shared<Impl>()) {
  store_.write_sql([](Sql& sql) { detail::create_meta_tables(sql); });
  // Inline projections run inside every append of this process. The slot holds the runners
  // it calls (the engine's lock is taken briefly, never while waiting for the writer).
  impl_->hook = store_.on_appending().connect([impl = impl_](AppendTransaction& tx) {
    std::vector<std::shared_ptr<Runner>> inline_runners;
    {
      std::lock_guard lock(impl->mu);
      for (const auto& [name, runner] : impl->runners) inline_runners.push_back(runner);
    }
    for (const auto& runner : inline_runners) runner->on_append(tx);
  });
  // An inline failure is recorded inside the append's transaction; it is reported once that
  // transaction has committed (before append() returns to its caller).
  impl_->committed =
      store_.on_appended().connect([impl = impl_](const std::vector<RecordedEvent>& events) {
        for (const auto& runner : impl->all()) runner->publish_inline_failure(events);
      });
}

ProjectionEngine::~ProjectionEngine() {
  impl_->hook.disconnect();
  impl_->committed.disconnect();
  stop();
}

void ProjectionEngine::add(std::shared_ptr<Projection> projection, ProjectionOptions options) {
  if (!projection) throw InvalidArgument("factum: ProjectionEngine::add was given no projection");
  auto runner = std::make_shared<Runner>(store_, std::move(projection), options, options_);
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->runners.count(runner->name()) != 0) {
      throw InvalidArgument("factum: projection '" + runner->name() + "' was added already");
    }
  }
  runner->start();
  std::lock_guard lock(impl_->mu);
  if (!impl_->runners.emplace(runner->name(), runner).second) {
    throw InvalidArgument("factum: projection '" + runner->name() + "' was added already");
  }
}

ProjectionEngine::Runner& ProjectionEngine::find(std::string_view name) const {
  std::lock_guard lock(impl_->mu);
  const auto it = impl_->runners.find(name);
  if (it == impl_->runners.end()) {
    throw NotFound("factum: no projection named '" + std::string(name) + "' in this engine");
  }
  return *it->second;
}

void ProjectionEngine::rebuild(std::string_view name) { find(name).request_rebuild(); }

void ProjectionEngine::restart(std::string_view name) { find(name).restart(); }

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
  return find(name).status(store_.head_position());
}

bool ProjectionEngine::wait_for(std::string_view name, Position p,
                                std::chrono::milliseconds timeout) const {
  const Runner& runner = find(name);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (runner.serving_current() && runner.checkpoint() >= p) return true;
    if (runner.halted() || std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
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
      s.mode = row.mode == "inline" ? ProjectionMode::inline_append : ProjectionMode::async;
      s.state = row.state == "running"       ? ProjectionState::running
                : row.state == "catching_up" ? ProjectionState::catching_up
                : row.state == "rebuilding"  ? ProjectionState::rebuilding
                : row.state == "failed"      ? ProjectionState::failed
                : row.state == "retrying"    ? ProjectionState::retrying
                                             : ProjectionState::stopped;
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
